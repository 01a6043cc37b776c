"""The ``monte_carlo`` step scorer: Math-Shepherd's Monte-Carlo step values.

Math-Shepherd (Wang et al. 2024, "Math-Shepherd: Verify and Reinforce LLMs Step-by-step without Human
Annotations") labels a step by completing the solution k times from the end of that step and counting how many
completions reach the right answer (its "soft estimation"). Here: for each step end but the last, the prefix is the
prompt and the completion's tokens up to that step's end; the prefixes of every completion of the training step go
to the run's rollout engine in ONE batched generate call (k continuations each), each continuation is scored, as the
prefix's text followed by the continuation, by the run's primary verifier, and the step's value is the share
correct. The last step's value is the completion's own verdict (its continuation would be the completion itself).

How ours differs: k is small (default 4) and the values score the policy's own steps online, during training,
rather than labelling a dataset for a PRM; at most ``max_prefixes`` prefixes per training step are continued (the
first ones, completion by completion) and the steps past them are absent (nan). The tokens generated are counted
(``process/mc_tokens``, added to ``budget/tokens_generated``). torch loads lazily.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING

from pydantic import Field

from trainer.bounds import BoundedModel
from trainer.process.base import ScorerContext, StepScoreBatch

if TYPE_CHECKING:
    from trainer.process.steps import StepSpans
    from trainer.samples import Sample


class MonteCarloParams(BoundedModel):
    k: int = Field(
        4, ge=1, le=64, description="Continuations sampled from each step's end (Math-Shepherd's N)."
    )
    max_prefixes: int = Field(
        256,
        ge=1,
        le=8192,
        description="Most step prefixes continued per training step (k continuations each); later steps are absent.",
    )
    max_new_tokens: int | None = Field(
        None,
        ge=1,
        le=32_768,
        description="Tokens per continuation; null: the run's rollout.max_completion_length.",
    )


def monte_carlo_scores(
    completions: Sequence[str],
    samples: Sequence[Sample],
    spans: StepSpans,
    token_ids: Sequence[Sequence[int]],
    context: ScorerContext,
) -> StepScoreBatch:
    """The ``monte_carlo`` scorer (see the module docstring)."""
    from dataclasses import replace

    params: MonteCarloParams = context.params
    if (
        context.engine is None
        or context.sampling is None
        or context.generator is None
        or context.verifier is None
    ):
        raise ValueError(
            "the monte_carlo step scorer needs the run's rollout engine, sampling params, generator and verifier"
        )
    tok = context.tokenizer
    scores: list[list[float]] = [[math.nan] * len(row) for row in spans]
    prefixes: list[tuple[int, int, str]] = []  # (completion, step, prefix completion text)
    for i, row in enumerate(spans):
        for k, (_, end) in enumerate(row[:-1]):
            if len(prefixes) >= params.max_prefixes:
                break
            prefixes.append((i, k, tok.decode(list(token_ids[i][:end]), skip_special_tokens=True)))
        if row and context.correct is not None:
            scores[i][-1] = 1.0 if context.correct[i] else 0.0
    tokens = 0
    if prefixes:
        sampling = context.sampling
        if params.max_new_tokens is not None:
            sampling = replace(sampling, max_new_tokens=params.max_new_tokens)
        prompts = [context.prompts[i] + text for i, _, text in prefixes for _ in range(params.k)]
        batch = context.engine.generate(prompts, sampling, context.generator)  # one call for the whole step
        tokens = int(batch.lengths.sum())
        full = [
            text + cont
            for (_, _, text), cont in zip(
                (p for p in prefixes for _ in range(params.k)), batch.texts, strict=True
            )
        ]
        owners = [samples[i] for i, _, _ in prefixes for _ in range(params.k)]
        results = context.verifier(full, owners)
        for j, (i, k, _) in enumerate(prefixes):
            got = results[j * params.k : (j + 1) * params.k]
            scored = [r for r in got if not (isinstance(r.reward, float) and math.isnan(r.reward))]
            scores[i][k] = sum(bool(r.correct) for r in scored) / len(scored) if scored else math.nan
    details = [{"continued": sum(1 for p in prefixes if p[0] == i), "k": params.k} for i in range(len(spans))]
    return StepScoreBatch(
        scores, details, {"process/mc_tokens": float(tokens), "process/mc_prefixes": float(len(prefixes))}
    )
