"""Paired statistics over seeds: effect, 95% confidence interval and minimum detectable effect.

Each seed's method value is paired with the same seed's comparison value (same data order, same initial
weights, same evaluation problems), and the row is judged on the paired differences d_1..d_n:

- effect: the mean difference, and relative to the comparison arm's mean;
- 95% confidence interval: mean +- t(0.975, n-1) * sd(d) / sqrt(n) (Student's t);
- minimum detectable effect: (t(0.975, n-1) + t(0.80, n-1)) * sd(d) / sqrt(n), the true difference a two-sided
  5% test over these seeds finds four times in five (80% power), given the spread observed;
- p-value: the paired t test's two-sided p for "no difference";
- equivalence (a claim of *no change*): Schuirmann's two one-sided tests (TOST) against a stated margin m,
  p = max(P(T >= (mean + m) / se), P(T <= (mean - m) / se)); p < 0.05 is the same as the 90% interval lying
  inside [-m, +m];
- Holm's step-down adjustment of a family of p-values (the whole table's claim parts), which keeps the chance
  of any false "as claimed" or "opposite" in the table at 5% where unadjusted tests would give one in twenty
  per part.

The t quantiles come from the regularised incomplete beta function (no scipy in the runtime); ``t_quantile``
matches published tables to 4 decimals.
"""

from __future__ import annotations

import math
import statistics
from dataclasses import asdict, dataclass
from typing import Any

CONFIDENCE = 0.95
POWER = 0.80


def _betacf(a: float, b: float, x: float) -> float:
    """Continued fraction of the incomplete beta function (modified Lentz)."""
    tiny, qab, qap, qam = 1e-300, a + b, a + 1.0, a - 1.0
    c, d = 1.0, 1.0 - qab * x / qap
    d = 1.0 / (d if abs(d) > tiny else tiny)
    h = d
    for m in range(1, 300):
        m2 = 2 * m
        aa = m * (b - m) * x / ((qam + m2) * (a + m2))
        d = 1.0 + aa * d
        d = 1.0 / (d if abs(d) > tiny else tiny)
        c = 1.0 + aa / c
        c = c if abs(c) > tiny else tiny
        h *= d * c
        aa = -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2))
        d = 1.0 + aa * d
        d = 1.0 / (d if abs(d) > tiny else tiny)
        c = 1.0 + aa / c
        c = c if abs(c) > tiny else tiny
        delta = d * c
        h *= delta
        if abs(delta - 1.0) < 1e-15:
            break
    return h


def _betainc(a: float, b: float, x: float) -> float:
    """Regularised incomplete beta I_x(a, b)."""
    if x <= 0.0:
        return 0.0
    if x >= 1.0:
        return 1.0
    front = math.exp(
        math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b) + a * math.log(x) + b * math.log1p(-x)
    )
    if x < (a + 1.0) / (a + b + 2.0):
        return front * _betacf(a, b, x) / a
    return 1.0 - front * _betacf(b, a, 1.0 - x) / b


def t_cdf(t: float, df: int) -> float:
    """P(T <= t) for Student's t with ``df`` degrees of freedom."""
    tail = 0.5 * _betainc(df / 2.0, 0.5, df / (df + t * t))
    return 1.0 - tail if t >= 0 else tail


def t_quantile(p: float, df: int) -> float:
    """The ``p`` quantile of Student's t (bisection on ``t_cdf``)."""
    if not 0.0 < p < 1.0 or df < 1:
        raise ValueError(f"t_quantile needs 0 < p < 1 and df >= 1, got p={p}, df={df}")
    lo, hi = -1e3, 1e3
    for _ in range(200):
        mid = (lo + hi) / 2
        if t_cdf(mid, df) < p:
            lo = mid
        else:
            hi = mid
    return (lo + hi) / 2


@dataclass(frozen=True)
class Paired:
    """The paired comparison of one measure over n seeds."""

    n: int
    method_mean: float
    comparison_mean: float
    effect: float  # mean of method - comparison
    sd: float  # sd of the differences
    ci_low: float
    ci_high: float
    mde: float  # minimum detectable |effect| at 5% two-sided, 80% power
    relative: float  # effect / comparison_mean (nan when the comparison mean is 0)
    p_value: float = float("nan")  # paired t, two-sided

    @property
    def significant(self) -> bool:
        return self.ci_low > 0 or self.ci_high < 0

    @staticmethod
    def from_json(data: dict[str, Any]) -> Paired:
        """Back from ``to_json`` (null is nan there)."""
        values: dict[str, Any] = {k: (math.nan if v is None else v) for k, v in data.items()}
        return Paired(**values)

    def to_json(self) -> dict[str, Any]:
        return {
            k: (v if not isinstance(v, float) or math.isfinite(v) else None) for k, v in asdict(self).items()
        }


def paired(method: list[float], comparison: list[float]) -> Paired:
    """Effect, 95% CI and minimum detectable effect of ``method`` - ``comparison`` over paired seeds."""
    pairs = [(m, c) for m, c in zip(method, comparison, strict=True) if math.isfinite(m) and math.isfinite(c)]
    n = len(pairs)
    nan = float("nan")
    if n == 0:
        return Paired(0, nan, nan, nan, nan, nan, nan, nan, nan)
    diffs = [m - c for m, c in pairs]
    m_mean, c_mean, effect = (
        statistics.fmean(p[0] for p in pairs),
        statistics.fmean(p[1] for p in pairs),
        statistics.fmean(diffs),
    )
    relative = effect / c_mean if c_mean else nan
    if n < 2:
        return Paired(n, m_mean, c_mean, effect, nan, nan, nan, nan, relative)
    sd = statistics.stdev(diffs)
    se = sd / math.sqrt(n)
    t_conf = t_quantile(0.5 + CONFIDENCE / 2, n - 1)
    mde = (t_conf + t_quantile(POWER, n - 1)) * se
    # se 0: every seed moved by exactly the same amount (certainly different unless that amount is 0)
    p_value = 2 * (1 - t_cdf(abs(effect) / se, n - 1)) if se > 0 else float(effect == 0)
    return Paired(
        n, m_mean, c_mean, effect, sd, effect - t_conf * se, effect + t_conf * se, mde, relative, p_value
    )


def tost(p: Paired, margin: float) -> float:
    """The two one-sided tests' p-value that the true paired difference lies inside (-margin, +margin)."""
    if p.n < 2 or not math.isfinite(p.sd) or margin <= 0:
        return float("nan")
    se = p.sd / math.sqrt(p.n)
    if se == 0:
        return 0.0 if abs(p.effect) < margin else 1.0
    lower = 1 - t_cdf((p.effect + margin) / se, p.n - 1)  # H0: difference <= -margin
    upper = t_cdf((p.effect - margin) / se, p.n - 1)  # H0: difference >= +margin
    return max(lower, upper)


def equivalence_interval(p: Paired) -> tuple[float, float]:
    """The 90% interval TOST at 5% reads: equivalence holds when it lies inside [-margin, +margin]."""
    if p.n < 2 or not math.isfinite(p.sd):
        return float("nan"), float("nan")
    half = t_quantile(0.95, p.n - 1) * p.sd / math.sqrt(p.n)
    return p.effect - half, p.effect + half


def holm(p_values: list[float]) -> list[float]:
    """Holm-adjusted p-values in the given order (nan stays nan and does not count in the family)."""
    order = sorted((p, i) for i, p in enumerate(p_values) if math.isfinite(p))
    m = len(order)
    adjusted = [float("nan")] * len(p_values)
    running = 0.0
    for rank, (p, i) in enumerate(order):
        running = max(running, min(1.0, (m - rank) * p))
        adjusted[i] = running
    return adjusted


def paired_eval_se(method_bits: str, comparison_bits: str) -> float:
    """The evaluation's own standard error of one seed's paired accuracy difference on a fixed problem set:
    sqrt(b + c - (b - c)^2 / N) / N with b, c the problems only one of the two models solved (McNemar)."""
    n = len(method_bits)
    if n == 0 or n != len(comparison_bits):
        return float("nan")
    b = sum(x == "1" and y == "0" for x, y in zip(method_bits, comparison_bits, strict=True))
    c = sum(x == "0" and y == "1" for x, y in zip(method_bits, comparison_bits, strict=True))
    return math.sqrt(max(b + c - (b - c) ** 2 / n, 0.0)) / n
