"""Benchmark metrics as pure functions of per-problem counts and answers (no torch).

- ``pass_at_k(n, c, k)``: the unbiased estimator ``1 - C(n-c, k) / C(n, k)`` of the probability that at
  least one of k samples is correct, from n >= k samples of which c are correct (Chen et al. 2021,
  METHODS.md [ext]; Pass@k in 001:L13, 001:L93). Computed in the product form
  ``1 - prod_{i=n-c+1}^{n} (1 - k / i)``, which never forms the huge binomials.
- ``avg_at_n(scores)``: the mean per-sample score of one problem (Avg@k, 001:L3); with one 0/1
  verifier it is the accuracy, which equals pass@1.
- ``maj_at_k(answers, correct, k)``: majority vote (self-consistency, 001:L47, 004:L357) over the
  *normalised* extracted answers of the first k samples. Samples with no extracted answer do not vote.
  Ties are broken by first occurrence: of the answers with the most votes, the one that appears first
  among the k samples wins. The vote is correct when the first sample giving the winning answer is
  correct (samples with the same normalised answer are normally scored alike; this makes the rule
  total when a verifier disagrees with the normalisation).
- ``bootstrap_ci``: percentile bootstrap over problems, and over seeds when several were run.
"""

from __future__ import annotations

import math
import re
import unicodedata
import warnings
from collections.abc import Sequence
from fractions import Fraction

import numpy as np

_NUMBER_RE = re.compile(r"[-+]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d{1,3})?(?:/\d+)?")
_TRAILING = ".。!！"


def pass_at_k(n: int, c: int, k: int) -> float:
    """Unbiased pass@k from n samples with c correct (product form; exact 0 and 1 at the ends).

    >>> pass_at_k(4, 1, 1), pass_at_k(4, 0, 2), pass_at_k(4, 4, 2), round(pass_at_k(4, 1, 2), 4)
    (0.25, 0.0, 1.0, 0.5)
    """
    if not 0 <= c <= n:
        raise ValueError(f"c must be between 0 and n={n}, got {c}")
    if not 1 <= k <= n:
        raise ValueError(f"k must be between 1 and n={n}, got {k}")
    if n - c < k:  # every k-subset holds a correct sample
        return 1.0
    prob_all_wrong = 1.0
    for i in range(n - c + 1, n + 1):
        prob_all_wrong *= 1.0 - k / i
    return 1.0 - prob_all_wrong


def avg_at_n(scores: Sequence[float]) -> float:
    """Mean per-sample score of one problem's samples."""
    if not scores:
        raise ValueError("avg@n of no samples is undefined: pass at least one score")
    return float(sum(scores) / len(scores))


def normalise_answer(answer: str | None) -> str | None:
    """The form majority voting compares: NFC, whitespace collapsed, trailing period dropped, casefolded,
    and numbers in a canonical form (``"0.50"``, ``".5"`` and ``"1/2"`` all become ``"1/2"``).

    >>> [normalise_answer(a) for a in ["  Paris. ", "95.0", "1/2", "", None]]
    ['paris', '95', '1/2', None, None]
    """
    if answer is None:
        return None
    text = " ".join(unicodedata.normalize("NFC", answer).split()).rstrip(_TRAILING).strip()
    if not text:
        return None
    compact = text.replace(",", "").replace(" ", "")
    if len(compact) <= 40 and _NUMBER_RE.fullmatch(compact):
        try:
            value = Fraction(compact)
        except (ValueError, ZeroDivisionError):
            return text.casefold()
        return str(value)
    return text.casefold()


def majority_answer(answers: Sequence[str | None]) -> int | None:
    """Index of the sample whose answer wins the vote (first occurrence of the winner), or None if no
    sample has an answer. ``answers`` are already normalised."""
    counts: dict[str, int] = {}
    first: dict[str, int] = {}
    for i, answer in enumerate(answers):
        if answer is None:
            continue
        counts[answer] = counts.get(answer, 0) + 1
        first.setdefault(answer, i)
    if not counts:
        return None
    best = max(counts.values())
    winner = min((a for a, c in counts.items() if c == best), key=lambda a: first[a])
    return first[winner]


def maj_at_k(answers: Sequence[str | None], correct: Sequence[bool], k: int) -> float:
    """1.0 when the majority answer of the first k samples is correct, else 0.0 (see the module doc).

    >>> maj_at_k(["5", "7", "7", "5"], [True, False, False, True], 4)  # 2-2 tie: "5" came first
    1.0
    """
    if len(answers) != len(correct):
        raise ValueError(f"{len(answers)} answers but {len(correct)} correctness flags: give one per sample")
    if not 1 <= k <= len(answers):
        raise ValueError(f"k must be between 1 and the number of samples {len(answers)}, got {k}")
    winner = majority_answer(answers[:k])
    return 0.0 if winner is None else float(bool(correct[winner]))


def bootstrap_ci(
    values: Sequence[Sequence[float]] | np.ndarray,
    samples: int = 1000,
    confidence: float = 0.95,
    seed: int = 0,
) -> tuple[float, float]:
    """Percentile bootstrap CI of the mean of ``values[seed_index][problem_index]``.

    Each resample draws problems with replacement and, when there are several seeds, seeds with
    replacement too (a two-level bootstrap), then takes the mean over the drawn cells. NaN cells (a
    problem missing under one seed) are ignored. With one problem and one seed the interval is the point.
    """
    table = np.asarray(values, dtype=np.float64)  # [S, P]
    if table.ndim != 2 or table.size == 0:
        raise ValueError(f"values must be a non-empty [seeds, problems] table, got shape {table.shape}")
    point = float(np.nanmean(table))
    if samples <= 0:
        return (point, point)
    rng = np.random.default_rng(seed)
    n_seeds, n_problems = table.shape
    problem_draws = rng.integers(0, n_problems, size=(samples, n_problems))  # [B, P]
    seed_draws = (
        rng.integers(0, n_seeds, size=(samples, n_seeds))
        if n_seeds > 1
        else np.zeros((samples, 1), dtype=np.int64)
    )  # [B, S]
    cells = table[seed_draws[:, :, None], problem_draws[:, None, :]]  # [B, S, P]
    with warnings.catch_warnings():  # an all-NaN resample warns "Mean of empty slice"; it is dropped below
        warnings.simplefilter("ignore", RuntimeWarning)
        means = np.nanmean(cells.reshape(samples, -1), axis=1)  # [B]
    means = means[np.isfinite(means)]
    if means.size == 0:
        return (point, point)
    alpha = (1.0 - confidence) / 2
    low, high = np.quantile(means, [alpha, 1.0 - alpha])
    return (float(low), float(high))


def pass_at_k_curve(counts: Sequence[tuple[int, int]], ks: Sequence[int] | None = None) -> dict[int, float]:
    """Mean pass@k over problems for each k (default 1..min n): the Pass@k-vs-k curve of a results table.

    ``counts`` holds one (n, c) per problem (and seed).
    """
    if not counts:
        return {}
    n_min = min(n for n, _ in counts)
    ks = list(ks) if ks is not None else list(range(1, n_min + 1))
    return {k: float(np.mean([pass_at_k(n, c, k) for n, c in counts])) for k in ks if 1 <= k <= n_min}


def finite(value: float) -> float:
    """``value`` if finite, else NaN (metrics travel to JSON columns that refuse infinities)."""
    return value if math.isfinite(value) else float("nan")
