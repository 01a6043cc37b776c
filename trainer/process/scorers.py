"""Step scorers: one score per step of each completion, in [0, 1], the probability that the step is right.

Registered in ``STEP_SCORERS`` (a name, a one-line description, a bounded params model and a score function
``(completions, samples, spans, token_ids, context) -> StepScoreBatch``), like the verifiers are in VERIFIERS:

- ``oracle_chain``: the chain_arithmetic verifier's step reading (trainer/verifiers/chain_arithmetic.py: its
  ``first_wrong_step``, in the spirit of Lightman et al. 2023, "Let's Verify Step by Step"): the steps before the
  first wrong one score 1.0, that step and every later one 0.0, every step of a right scratchpad 1.0. When every
  line is right but the final answer is not (or missing), the step holding the answer is the first wrong one.
  Absent (nan) when the sample has no reference scratchpad;
- ``prm``: a process reward model checkpoint (trainer/process/prm_head.py);
- ``monte_carlo``: Math-Shepherd's Monte-Carlo step values (trainer/process/monte_carlo.py);
- ``implicit``: PRIME's implicit PRM, trained online on the outcome labels (trainer/process/implicit_prm.py); the
  one stateful scorer: its PRM lives in the run's ``ScorerState`` (``ScorerContext.state``).

A score that cannot be computed is ``nan`` (absent), never 0: the credit methods give its step no process credit.
Torch-free at import.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from trainer.bounds import BoundedModel
from trainer.process.base import ScorerContext, StepScoreBatch
from trainer.process.implicit_prm import ImplicitPRMParams, implicit_scores
from trainer.process.monte_carlo import MonteCarloParams, monte_carlo_scores
from trainer.process.prm_head import PRMParams, prm_scores
from trainer.process.steps import StepSpans, TokenText, token_texts
from trainer.registry import Registry
from trainer.samples import Sample
from trainer.verifiers.chain_arithmetic import (
    ANSWER_MARKER,
    ChainArithmeticParams,
    ChainArithmeticVerifier,
)

_LINE_CHUNK_RE = re.compile(r"[^=;\n]+")  # what the chain verifier's split on [=;\n]+ keeps


ScoreFn = Callable[
    [Sequence[str], Sequence[Sample], StepSpans, Sequence[Sequence[int]], ScorerContext], StepScoreBatch
]


@dataclass(frozen=True)
class StepScorer:
    """A registered step scorer."""

    name: str
    description: str
    Params: type[BoundedModel]
    score: ScoreFn


STEP_SCORERS: Registry[StepScorer] = Registry("step scorer")


def _step_of_token(spans: Sequence[tuple[int, int]], token: int) -> int:
    for k, (s, e) in enumerate(spans):
        if s <= token < e:
            return k
    return len(spans) - 1


def chain_first_wrong(
    tt: TokenText,
    spans: Sequence[tuple[int, int]],
    sample: Sample,
    params: ChainArithmeticParams | None = None,
) -> tuple[int | None, bool, dict[str, Any]]:
    """(the index of the first wrong step or None, whether the sample has a reference scratchpad, the verifier's
    detail) for one completion read as the chain_arithmetic verifier reads it. The verifier's line index is mapped
    to the step holding the line's first character; a missing line, or a wrong or missing final answer after
    right lines, to the step holding the answer marker (else the last step)."""
    params = params or ChainArithmeticParams()
    result = ChainArithmeticVerifier(params)([tt.text], [sample])[0]
    detail = result.detail
    if not spans or detail.get("steps_expected") is None:
        return None, False, detail
    text = tt.text[: params.max_chars]
    marker_at = text.find(ANSWER_MARKER)
    body = text if marker_at < 0 else text[:marker_at]
    line_starts = [
        m.start() + (len(m.group()) - len(m.group().lstrip()))
        for m in _LINE_CHUNK_RE.finditer(body)
        if m.group().strip()
    ]
    answer_char = marker_at if marker_at >= 0 else None
    wrong = detail.get("first_wrong_step")
    if wrong is not None:
        index = int(wrong["index"])
        char = line_starts[index] if index < len(line_starts) else answer_char
    elif not result.correct:
        char = answer_char
    else:
        return None, True, detail
    step = len(spans) - 1 if char is None else _step_of_token(spans, tt.token_at(char))
    return step, True, detail


def _oracle_chain(
    completions: Sequence[str],
    samples: Sequence[Sample],
    spans: StepSpans,
    token_ids: Sequence[Sequence[int]],
    context: ScorerContext,
) -> StepScoreBatch:
    tts = token_texts(token_ids, context.tokenizer)
    scores, details = [], []
    for tt, row, sample in zip(tts, spans, samples, strict=True):
        wrong, known, _ = chain_first_wrong(tt, row, sample, context.chain_params)
        if not known:
            scores.append([math.nan] * len(row))
            details.append({"note": "no reference scratchpad: the oracle has no step labels"})
            continue
        cut = len(row) if wrong is None else wrong
        scores.append([1.0 if k < cut else 0.0 for k in range(len(row))])
        details.append({})
    return StepScoreBatch(scores, details)


class OracleChainParams(BoundedModel):
    """The oracle reads the run's chain_arithmetic verifier params; it has none of its own."""


STEP_SCORERS.register("oracle_chain")(
    StepScorer(
        "oracle_chain",
        "The chain_arithmetic verifier's step check: 1 before the first wrong step, 0 from it on.",
        OracleChainParams,
        _oracle_chain,
    )
)
STEP_SCORERS.register("prm")(
    StepScorer(
        "prm",
        "A process reward model checkpoint scored at each step's end (token classification, or Math-Shepherd's "
        "causal-LM step tag).",
        PRMParams,
        prm_scores,
    )
)
STEP_SCORERS.register("monte_carlo")(
    StepScorer(
        "monte_carlo",
        "Math-Shepherd's Monte-Carlo values: the share of k continuations from each step's end that are right.",
        MonteCarloParams,
        monte_carlo_scores,
    )
)
STEP_SCORERS.register("implicit")(
    StepScorer(
        "implicit",
        "PRIME's implicit PRM: sigmoid(beta * the step's summed log-ratio of an outcome-trained LM to its frozen "
        "start), updated online on the verifier's verdicts.",
        ImplicitPRMParams,
        implicit_scores,
    )
)


def blamed_step(scores: Sequence[float]) -> int | None:
    """The first step whose score is below 0.5 (absent scores blame nothing), or None."""
    return next((k for k, s in enumerate(scores) if not math.isnan(s) and s < 0.5), None)


def first_error_f1(pairs: Sequence[tuple[int | None, int | None]]) -> float | None:
    """ProcessBench's first-error F1 over (predicted, oracle) first wrong steps: the harmonic mean of the accuracy
    on erroneous completions (the same step blamed) and on right ones (nothing blamed); with only one kind present,
    that kind's accuracy. None without pairs."""
    wrong = [p == o for p, o in pairs if o is not None]
    right = [p is None for p, o in pairs if o is None]
    if not wrong and not right:
        return None
    if not wrong or not right:
        return sum(wrong or right) / len(wrong or right)
    a, b = sum(wrong) / len(wrong), sum(right) / len(right)
    return 0.0 if a + b == 0 else 2 * a * b / (a + b)
