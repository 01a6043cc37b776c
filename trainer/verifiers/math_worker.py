"""The part of the ``math`` verifier that runs inside timeout-pool workers (imports math-verify eagerly).

Kept apart from ``math_answer.py`` so that importing the verifier registry stays light, while a worker
pays the math-verify/sympy import (about a second) when it loads ``verify_answer``, before the per-call
clock starts. math-verify's own signal-based timeouts are switched off: the pool's hard timeout rules.

What is added on top of math-verify (each measured by benchmarks/math_verifier_vs_math_verify.py):

- Scientific notation is read whole. math-verify reads a plain ``2e5`` as 2 (the mantissa only) and
  ``\\boxed{2e5}`` as ``2 * e * 5`` (Euler's number); ``rewrite_scientific`` turns ``2e5`` / ``1.5E-3`` into
  ``2\\times 10^{5}`` (inside ``$...$`` when the number stands in plain text) before parsing.
- A sympy fallback (``sympy_fallback``), tried only when math-verify says "not equivalent": degrees
  (``\\sin 60^\\circ``), repeating decimals (``0.\\overline{3}``), ``i`` as the imaginary unit
  (``e^{i\\pi}``), plain-text expressions math-verify does not read (``sqrt(8)``, ``2*sqrt(2)``,
  ``sin(x)^2 + cos(x)^2``), then ``simplify(a - b) == 0`` and a numeric check at random points. It has a
  soft time budget (``signal.setitimer`` in the worker's main thread); past it math-verify's verdict stands.
"""

from __future__ import annotations

import cmath
import contextlib
import logging
import random
import re
import signal
import threading
from collections.abc import Iterator
from fractions import Fraction
from typing import Any

import sympy
from math_verify import parse, verify
from sympy.parsing.sympy_parser import (
    convert_xor,
    implicit_multiplication_application,
    parse_expr,
    standard_transformations,
)

# With timeouts disabled math-verify logs a warning once per process; the pool enforces the timeout.
logging.getLogger("math_verify").setLevel(logging.ERROR)

_DELIMITERS = ("$", "\\(", "\\[", "\\boxed", "\\fbox")
_MAX_SHOWN = 300

_SCI_RE = re.compile(r"(?<![\w.\\])(\d+(?:\.\d*)?|\.\d+)[eE]([-+]?\d{1,4})(?![\w{]|\.\d)")
_DOLLAR_RE = re.compile(r"(?<!\\)\$\$?")  # "$$" opens or closes one display
_DEGREES_RE = re.compile(r"(\d+(?:\.\d+)?)\s*(?:\^\s*\{?\s*\\circ\s*\}?|°|\\degree\b)")
_OVERLINE_RE = re.compile(r"(\d*)\.(\d*)\\overline\{(\d{1,30})\}")
_PLAIN_CHARS_RE = re.compile(r"[0-9A-Za-z_+\-*/^().,\s]{1,200}")
_PLAIN_NAMES = {
    "sqrt": sympy.sqrt,
    "cbrt": sympy.cbrt,
    "exp": sympy.exp,
    "ln": sympy.log,
    "log": lambda x: sympy.log(x, 10),
    "sin": sympy.sin,
    "cos": sympy.cos,
    "tan": sympy.tan,
    "cot": sympy.cot,
    "sec": sympy.sec,
    "csc": sympy.csc,
    "asin": sympy.asin,
    "acos": sympy.acos,
    "atan": sympy.atan,
    "arcsin": sympy.asin,
    "arccos": sympy.acos,
    "arctan": sympy.atan,
    "sinh": sympy.sinh,
    "cosh": sympy.cosh,
    "tanh": sympy.tanh,
    "abs": sympy.Abs,
    "pi": sympy.pi,
    "e": sympy.E,
}  # fmt: skip  -- log is base 10, as math-verify reads \log
# What parse_expr's own transformations call (numbers become Integer(...), names Symbol(...)); no builtins.
_PARSE_GLOBALS = {
    "Integer": sympy.Integer, "Float": sympy.Float, "Rational": sympy.Rational, "Symbol": sympy.Symbol,
    "__builtins__": {},
}  # fmt: skip
_ANSWER_LEAD_RE = re.compile(r"(?:answer\s*(?:is|:)|=)\s*", re.IGNORECASE)
_MAX_OPS = 400  # larger expressions are left to math-verify alone
_POINTS = 8  # random signs
_POSITIVE_POINTS = 4  # every variable positive: the real domain of sqrt(x), log(x), x^(1/2)
_REAL_TOL = 1e-12


def as_latex_answer(text: str) -> str:
    """Wrap a bare answer as ``\\boxed{...}`` so math-verify reads it whole ('(0, 1]' is an interval, not 1)."""
    return text if any(d in text for d in _DELIMITERS) else f"\\boxed{{{text}}}"


def _in_math(text: str, pos: int) -> bool:
    """Whether ``pos`` lies inside ``$...$``, ``\\(...\\)``, ``\\[...\\]`` or a ``\\boxed{...}`` (a heuristic)."""
    before = text[:pos]
    if len(_DOLLAR_RE.findall(before)) % 2 == 1:
        return True
    if before.rfind("\\(") > before.rfind("\\)") or before.rfind("\\[") > before.rfind("\\]"):
        return True
    start = max(before.rfind("\\boxed{"), before.rfind("\\fbox{"))
    if start < 0:
        return False
    depth = 0
    for char in before[start:]:
        depth += (char == "{") - (char == "}")
    return depth > 0


def rewrite_scientific(text: str) -> str:
    """``2e5`` -> ``2\\times 10^{5}`` (``$``-wrapped in plain text), so math-verify reads the exponent.

    >>> rewrite_scientific("so x is 1.5E-3.")
    'so x is $1.5\\\\times 10^{-3}$.'
    """

    def replace(match: re.Match[str]) -> str:
        exponent = match.group(2).removeprefix("+")
        latex = f"{match.group(1)}\\times 10^{{{exponent}}}"
        return latex if _in_math(text, match.start()) else f"${latex}$"

    return _SCI_RE.sub(replace, text)


def _shown(parsed: list[Any]) -> str | None:
    """The text math-verify matched (a string already, so nothing can hang converting a huge expression)."""
    if not parsed:
        return None
    text = next((p for p in parsed if isinstance(p, str)), None) or str(parsed[0])
    return text if len(text) <= _MAX_SHOWN else text[: _MAX_SHOWN - 3] + "..."


def verify_answer(
    reference: str,
    answer_text: str,
    wrap_answer: bool,
    float_rounding: int,
    numeric_precision: int,
    strict: bool,
    fallback_budget_s: float = 0.0,
) -> tuple[bool, str | None, str | None]:
    """``(correct, extracted, parsed_reference)``; ``parsed_reference`` is None when the reference did not parse.

    ``fallback_budget_s`` > 0 turns on the sympy fallback for answers math-verify finds not equivalent.
    """
    gold_text = rewrite_scientific(as_latex_answer(reference))
    pred_text = rewrite_scientific(as_latex_answer(answer_text) if wrap_answer else answer_text)
    gold = parse(gold_text, parsing_timeout=None)  # type: ignore[arg-type]
    if not gold:
        return False, None, None
    pred = parse(pred_text, parsing_timeout=None)  # type: ignore[arg-type]
    correct = bool(pred) and _mv_verify(gold, pred, float_rounding, numeric_precision, strict)
    if not correct and fallback_budget_s > 0:
        with contextlib.suppress(_BudgetSpent), _soft_budget(fallback_budget_s):
            found = _fallback(gold_text, pred_text, gold, pred, float_rounding, numeric_precision, strict)
            if found is not None:
                return True, found, _shown(gold)
    if not pred:
        return False, None, _shown(gold)
    return correct, _shown(pred), _shown(gold)


def _mv_verify(
    gold: list[Any], pred: list[Any], float_rounding: int, numeric_precision: int, strict: bool
) -> bool:
    return bool(
        verify(
            gold,
            pred,
            float_rounding=float_rounding,
            numeric_precision=numeric_precision,
            strict=strict,
            timeout_seconds=None,
        )
    )


class _BudgetSpent(BaseException):
    """The fallback's soft time budget ran out (a BaseException, so sympy's ``except Exception`` lets it by)."""


@contextlib.contextmanager
def _soft_budget(seconds: float) -> Iterator[None]:
    """Raise ``_BudgetSpent`` after ``seconds`` (main thread only; elsewhere the pool's hard timeout rules)."""
    if threading.current_thread() is not threading.main_thread() or not hasattr(signal, "setitimer"):
        yield
        return

    def expire(signum: int, frame: object) -> None:
        raise _BudgetSpent

    previous = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def _fallback(
    gold_text: str,
    pred_text: str,
    gold: list[Any],
    pred: list[Any],
    float_rounding: int,
    numeric_precision: int,
    strict: bool,
) -> str | None:
    """The answer's text when the fallback finds it equivalent to the reference, else None."""
    gold_rw, pred_rw = _rewrite_conventions(gold_text), _rewrite_conventions(pred_text)
    if gold_rw != gold_text or pred_rw != pred_text:
        gold2 = parse(gold_rw, parsing_timeout=None) if gold_rw != gold_text else gold  # type: ignore[arg-type]
        pred2 = parse(pred_rw, parsing_timeout=None) if pred_rw != pred_text else pred  # type: ignore[arg-type]
        if gold2 and pred2 and _mv_verify(gold2, pred2, float_rounding, numeric_precision, strict):
            return _shown(pred2)
        gold, pred = gold2 or gold, pred2 or pred
    candidates = [(p, _shown(pred)) for p in pred[:1]]
    plain = plain_expression(pred_text)
    if plain is not None:
        candidates.append((plain, str(plain)[:_MAX_SHOWN]))
    for g in gold[:1]:
        for p, shown in candidates:
            if same_value(g, p):
                return shown
    return None


def _rewrite_conventions(text: str) -> str:
    """Degrees to radians (``60^\\circ`` -> ``\\frac{60\\pi}{180}``), ``0.\\overline{3}`` to ``\\frac{1}{3}``."""
    text = _DEGREES_RE.sub(lambda m: f"\\left(\\frac{{{m.group(1)}\\pi}}{{180}}\\right)", text)
    return _OVERLINE_RE.sub(_repeating_fraction, text)


def _repeating_fraction(match: re.Match[str]) -> str:
    whole, fixed, repeat = match.group(1) or "0", match.group(2), match.group(3)
    value = int(whole) + Fraction(
        int(fixed + repeat) - int(fixed or "0"), 10 ** len(fixed) * (10 ** len(repeat) - 1)
    )
    return f"\\frac{{{value.numerator}}}{{{value.denominator}}}"


def plain_expression(text: str) -> sympy.Expr | None:
    """A plain-text final answer (``sqrt(8)``, ``2*sqrt(2)``) as sympy, or None; only whitelisted names.

    The text after the last "answer is" / "=" is read, if it is made only of numbers, operators,
    parentheses, single-letter variables and the function names in ``_PLAIN_NAMES`` (so ``parse_expr``,
    which evaluates Python, sees nothing else). Chained or large powers are refused (``9^9^9``).
    """
    if "\\" in text or "$" in text:
        return None
    leads = list(_ANSWER_LEAD_RE.finditer(text))
    candidate = text[leads[-1].end() :] if leads else text
    candidate = candidate.strip().rstrip(".").strip()
    if not _PLAIN_CHARS_RE.fullmatch(candidate) or re.search(r"\.(?!\d)|__", candidate):
        return None
    names = set(re.findall(r"[A-Za-z_]+", candidate))
    if any(len(n) > 1 and n not in _PLAIN_NAMES for n in names):
        return None
    if re.search(r"(?:\^|\*\*)[\w(\s]*(?:\^|\*\*)|(?:\^|\*\*)\s*\(?\s*\d{3,}", candidate):
        return None
    local = {n: _PLAIN_NAMES.get(n, sympy.Symbol(n)) for n in names}
    transformations = (*standard_transformations, implicit_multiplication_application, convert_xor)
    try:
        expr = parse_expr(
            candidate, local_dict=local, global_dict=dict(_PARSE_GLOBALS), transformations=transformations
        )
    except Exception:
        return None
    return expr if isinstance(expr, sympy.Expr) else None


def same_value(a: Any, b: Any) -> bool:
    """Whether two sympy expressions are equal: ``simplify(a - b) == 0``, else numerically at random points.

    ``i`` is read as the imaginary unit on both sides; other variables are matched by name, and the points
    cover the variables of both sides (so ``x`` is not ``y``) and include negative values (so
    ``\\sqrt{x^2}`` is not ``x``). Points where either side is not real are outside the answers' real domain
    and do not count while enough real points remain, so ``5x\\sqrt{2x}`` is ``5\\sqrt{2x^3}`` (both real only
    for x >= 0) and ``\\sqrt{x^2}`` is still not ``x`` (both real everywhere).
    """
    if not isinstance(a, sympy.Expr) or not isinstance(b, sympy.Expr):
        return False
    a, b = _imaginary(a), _imaginary(b)
    if sympy.count_ops(a) > _MAX_OPS or sympy.count_ops(b) > _MAX_OPS:
        return False
    b = b.subs({s: sympy.Symbol(s.name) for s in b.free_symbols})  # type: ignore[attr-defined]
    a = a.subs({s: sympy.Symbol(s.name) for s in a.free_symbols})  # type: ignore[attr-defined]
    try:
        if sympy.simplify(a - b) == 0:
            return True
    except Exception:
        pass
    return _numerically_equal(a, b)


def _imaginary(expr: sympy.Expr) -> sympy.Expr:
    return expr.subs({s: sympy.I for s in expr.free_symbols if getattr(s, "name", "") == "i"})  # type: ignore[no-any-return]


def _numerically_equal(a: sympy.Expr, b: sympy.Expr) -> bool:
    """Equal at random points: at the points where both sides are real when there are enough of them (the
    answers' real domain), else at every point where both are finite (complex answers such as ``1 + i``)."""
    symbols = sorted(a.free_symbols | b.free_symbols, key=lambda s: s.name)  # type: ignore[attr-defined]
    rng = random.Random(0)
    positive = [{s: sympy.Float(rng.uniform(0.2, 3.0)) for s in symbols} for _ in range(_POSITIVE_POINTS)]
    mixed = [
        {s: sympy.Float(rng.choice((-1, 1)) * rng.uniform(0.2, 3.0)) for s in symbols} for _ in range(_POINTS)
    ]
    points = positive + mixed if symbols else [{}]
    values: list[tuple[complex, complex]] = []
    for point in points:
        try:
            x, y = complex(a.evalf(30, subs=point)), complex(b.evalf(30, subs=point))
        except Exception:
            continue
        if cmath.isfinite(x) and cmath.isfinite(y):
            values.append((x, y))
    real = [
        (x, y)
        for x, y in values
        if abs(x.imag) <= _REAL_TOL * max(1.0, abs(x)) and abs(y.imag) <= _REAL_TOL * max(1.0, abs(y))
    ]
    needed = min(3, len(points))
    compared = real if len(real) >= needed else values
    return len(compared) >= needed and all(abs(x - y) <= 1e-9 * max(1.0, abs(x), abs(y)) for x, y in compared)
