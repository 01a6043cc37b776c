"""A step's process scores, end to end: segment, score, and the record each completion carries.

``score_process`` is what the ``score_steps`` stage (trainer/step/stages.py) calls: the spans of every completion
(``segment``), the chosen scorer's scores, each completion's ``details["process"]`` record and the step's
``process/*`` metrics. The record (the shape the rollout browser reads):
``{"spans": [[s, e], ...], "scores": [float|None, ...], "blamed": k|None, "oracle_first_wrong": k|None,
"scorer": name, "segmenter": name}`` (+ ``"note"`` when the scorer says why a score is absent), where ``blamed``
is the first step scored below 0.5 and ``oracle_first_wrong`` the chain_arithmetic verifier's first wrong step
(mapped to a step index; see ``scorers.chain_first_wrong``) when the run scores with that verifier and the sample
has a reference scratchpad.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from trainer.process.prm_head import CHAIN_PRM
from trainer.process.scorers import (
    STEP_SCORERS,
    ScorerContext,
    blamed_step,
    chain_first_wrong,
    first_error_f1,
)
from trainer.process.steps import StepSpans, segment, token_texts
from trainer.samples import Sample
from trainer.verifiers.chain_arithmetic import ChainArithmeticParams


@dataclass(frozen=True)
class ProcessResult:
    spans: StepSpans
    scores: list[list[float]]
    detail: list[dict[str, Any]]  # [N] each completion's details["process"]
    metrics: dict[str, float]


def step_scorer_model(name_or_path: str) -> str:
    """A step scorer's ``model`` as a folder: ``tiny:chain-prm`` -> the tiny chain PRM (built on first use,
    trainer/process/tiny_prm.py), another ``tiny:`` name -> that built-in model, anything else as it is."""
    if name_or_path == CHAIN_PRM:
        from trainer.process.tiny_prm import ensure_tiny_prm

        return str(ensure_tiny_prm(log=lambda message: None))
    from trainer.models.tiny_model import resolve_model_path

    return resolve_model_path(name_or_path)


def with_builtin_model(params: Any) -> Any:
    """``params`` with a ``model`` of ``tiny:chain-prm`` replaced by the tiny chain PRM's folder; any other params as
    they are (the scorer resolves the other ``tiny:`` names itself)."""
    if getattr(params, "model", None) != CHAIN_PRM:
        return params
    return params.model_copy(update={"model": step_scorer_model(CHAIN_PRM)})


def score_process(
    config: Any,
    token_ids: Sequence[Sequence[int]],
    texts: Sequence[str],
    entropies: Sequence[Sequence[float]] | None,
    samples: Sequence[Sample],
    context: ScorerContext,
) -> ProcessResult:
    """Segment, score and describe N completions (``config``: the ProcessRewardConfig; ``token_ids`` cut to each
    completion's length). ``context.params`` is set here from the config."""
    spans = segment(token_ids, context.tokenizer, texts, entropies, config.segmenter)
    scorer = STEP_SCORERS.get(config.scorer.name)
    context.params = with_builtin_model(config.scorer.params)
    batch = scorer.score(texts, samples, spans, token_ids, context)
    scores = [[float(s) for s in row] for row in batch.scores]
    oracle: list[int | None] = [None] * len(spans)
    known = [False] * len(spans)
    if context.chain_params is not None:
        for i, (tt, row) in enumerate(zip(token_texts(token_ids, context.tokenizer), spans, strict=True)):
            oracle[i], known[i], _ = chain_first_wrong(tt, row, samples[i], context.chain_params)
    details = []
    for i, (row, values) in enumerate(zip(spans, scores, strict=True)):
        record: dict[str, Any] = {
            "spans": [[s, e] for s, e in row],
            "scores": [None if math.isnan(v) else v for v in values],
            "blamed": blamed_step(values),
            "oracle_first_wrong": oracle[i],
            "scorer": config.scorer.name,
            "segmenter": config.segmenter.name,
        }
        note = batch.detail[i].get("note") if i < len(batch.detail) else None
        if note:
            record["note"] = str(note)[:500]
        details.append(record)
    present = [v for row in scores for v in row if not math.isnan(v)]
    metrics = {
        "process/score_mean": sum(present) / len(present) if present else math.nan,
        "process/steps_mean": sum(len(r) for r in spans) / len(spans) if spans else 0.0,
        "process/blamed_frac": sum(d["blamed"] is not None for d in details) / len(details)
        if details
        else 0.0,
        **batch.metrics,
    }
    f1 = first_error_f1([(d["blamed"], oracle[i]) for i, d in enumerate(details) if known[i]])
    if f1 is not None:
        metrics["process/oracle_f1"] = f1
    return ProcessResult(spans, scores, details, metrics)


def chain_params_of(verifiers: Sequence[tuple[str, Any]]) -> ChainArithmeticParams | None:
    """The params of the run's chain_arithmetic verifier (the oracle's reading), or None when it has none."""
    for _, verifier in verifiers:
        if getattr(verifier, "name", None) == "chain_arithmetic":
            return verifier.params  # type: ignore[no-any-return]
    return None


def step_score_channel(
    spans: StepSpans, scores: Sequence[Sequence[float]], lengths: Sequence[int]
) -> list[list[float]]:
    """[N][n_i] each token's step score (nan where absent or outside every span)."""
    out = []
    for row, values, n in zip(spans, scores, lengths, strict=True):
        channel = [math.nan] * n
        for (s, e), v in zip(row, values, strict=True):
            channel[s : min(e, n)] = [v] * (min(e, n) - s)
        out.append(channel)
    return out
