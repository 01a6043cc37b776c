"""The part of the ``math`` verifier that runs inside timeout-pool workers (imports math-verify eagerly).

Kept apart from ``math_answer.py`` so that importing the verifier registry stays light, while a worker
pays the math-verify/sympy import (about a second) when it loads ``verify_answer``, before the per-call
clock starts. math-verify's own signal-based timeouts are switched off: the pool's hard timeout rules.
"""

from __future__ import annotations

import logging
from typing import Any

from math_verify import parse, verify

# With timeouts disabled math-verify logs a warning once per process; the pool enforces the timeout.
logging.getLogger("math_verify").setLevel(logging.ERROR)

_DELIMITERS = ("$", "\\(", "\\[", "\\boxed", "\\fbox")
_MAX_SHOWN = 300


def as_latex_answer(text: str) -> str:
    """Wrap a bare answer as ``\\boxed{...}`` so math-verify reads it whole ('(0, 1]' is an interval, not 1)."""
    return text if any(d in text for d in _DELIMITERS) else f"\\boxed{{{text}}}"


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
) -> tuple[bool, str | None, str | None]:
    """``(correct, extracted, parsed_reference)``; ``parsed_reference`` is None when the reference did not parse."""
    gold = parse(as_latex_answer(reference), parsing_timeout=None)  # type: ignore[arg-type]
    if not gold:
        return False, None, None
    pred = parse(as_latex_answer(answer_text) if wrap_answer else answer_text, parsing_timeout=None)  # type: ignore[arg-type]
    if not pred:
        return False, None, _shown(gold)
    correct = verify(
        gold,
        pred,
        float_rounding=float_rounding,
        numeric_precision=numeric_precision,
        strict=strict,
        timeout_seconds=None,
    )
    return bool(correct), _shown(pred), _shown(gold)
