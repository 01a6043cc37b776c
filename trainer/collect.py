"""The first stage of a training step: prompts -> completions -> scores -> rewards (issue 5 part 5).

``collect_rollouts(run, step)`` draws prompts from the run's prompt sampler, lets the configured
allocator (trainer/allocation.py) decide how many completions each gets, scores every generation call
as it comes back (allocators decide on rewards), and, with ``budget.dynamic_sampling``, drops silent
groups and draws more prompts until the step has ``prompts_per_step`` informative groups (DAPO). The
result is one flat batch with each group's completions contiguous and ``group_ids`` [N]; groups may have
different sizes. With the defaults (uniform sampler, 'fixed' allocator, no dynamic sampling) this is
exactly plain GRPO: one generation call for P x G completions, consuming the same random numbers.
"""

from __future__ import annotations

import dataclasses
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import torch
from torch import Tensor

from trainer.allocation import ALLOCATORS, Group
from trainer.data import render_prompt
from trainer.rollout import RolloutBatch
from trainer.rubrics.scoring import score_rubric
from trainer.samples import Sample
from trainer.verifiers.scoring import ScoreBatch, score_batch

if TYPE_CHECKING:
    from collections.abc import Sequence

    from trainer.run_setup import Run


@dataclass
class StepRollouts:
    """What a step trains on: P groups of completions, flat, each group contiguous."""

    samples: list[Sample]  # [P] one per group, in group order
    prompts: list[str]  # [P] rendered model inputs
    group_samples: list[Sample]  # [N] the sample of each completion
    batch: RolloutBatch  # [N, T]
    group_ids: Tensor  # [N] long, 0..P-1
    scores: ScoreBatch  # [N]
    rewards: Tensor  # [N] float32, scores.total
    allocation: list[dict[str, Any]]  # [N] group_size, round (generation call) and abandoned, for the rollout browser
    timings: dict[str, float]  # seconds: "gen" (engine) and "verify" (scoring)
    metrics: dict[str, float]  # budget/* (stable names, DESIGN.md)


def _score(run: Run, completions: Sequence[str], samples: Sequence[Sample], group_ids: Sequence[int]) -> ScoreBatch:
    """Verifiers, then the rubric when configured. ``group_ids`` number the groups within this call only:
    under 'vigor' or 'early_abandon' a group's completions arrive over several calls."""
    scores = score_batch(run.verifiers, run.config.reward_weights, completions, samples)
    if run.rubric is not None:  # rubric criteria as rubric/<name> keys, aggregated reward added to total
        scores = score_rubric(run.rubric, scores, completions, samples, list(group_ids))
    return scores


class _Calls:
    """Generation calls of one step; ``generate`` is the callback allocators use."""

    def __init__(self, run: Run) -> None:
        self.run = run
        self.done: list[tuple[RolloutBatch, ScoreBatch]] = []
        self.gen_s = 0.0
        self.verify_s = 0.0

    def generate(self, groups: Sequence[Group], counts: Sequence[int]) -> None:
        owners = [i for i, c in enumerate(counts) for _ in range(c)]
        if not owners:
            return
        run = self.run
        t0 = time.perf_counter()
        batch = run.engine.generate([groups[i].prompt for i in owners], run.sampling, run.generator)
        t1 = time.perf_counter()
        scores = _score(run, batch.texts, [groups[i].sample for i in owners], owners)
        self.verify_s += time.perf_counter() - t1
        self.gen_s += t1 - t0
        call = len(self.done)
        self.done.append((batch, scores))
        for row, i in enumerate(owners):
            group = groups[i]
            group.rows.append((call, row))
            group.rewards.append(scores.total[row])
            group.correct.append(scores.correct[row])


def collect_rollouts(run: Run, step: int) -> StepRollouts:
    """Sample prompts, allocate and generate completions, score them; see the module docstring.

    ``step`` (1-based) is part of the stage signature for schedules; no allocator uses it yet.
    """
    cfg, budget = run.config, run.config.budget
    P, G = cfg.training.prompts_per_step, cfg.rollout.num_generations
    allocate = ALLOCATORS.get(budget.allocator)
    calls = _Calls(run)
    kept: list[Group] = []
    generated: list[Group] = []
    rounds = 0
    while True:
        rounds += 1
        drawn = run.sampler.next_batch() if rounds == 1 else run.sampler.next_batch(P - len(kept))
        fresh = [Group(s, render_prompt(s, cfg.data, run.tokenizer)) for s in drawn]
        allocate(fresh, calls.generate, budget, G)
        generated += fresh
        run.sampler.observe([(g.sample.id, sum(g.correct), g.size) for g in fresh])
        if not budget.dynamic_sampling:
            kept = fresh
            break
        kept += [g for g in fresh if not g.silent]
        if len(kept) >= P or rounds >= budget.max_generation_rounds:
            break
    # Dynamic sampling that found nothing informative trains on the last draw (all advantages 0).
    kept = kept[:P] or fresh
    return _assemble(run, kept, generated, calls, rounds)


def _assemble(run: Run, kept: list[Group], generated: list[Group], calls: _Calls, rounds: int) -> StepRollouts:
    offsets = [0]
    for batch, _ in calls.done:
        offsets.append(offsets[-1] + len(batch))
    order = [offsets[call] + row for g in kept for call, row in g.rows]
    everything = RolloutBatch.concat([b for b, _ in calls.done], run.tokenizer.pad_token_id)
    all_scores = _concat_scores([s for _, s in calls.done])
    if order == list(range(len(everything))):  # plain GRPO: nothing dropped or reordered
        batch, scores = everything, all_scores
    else:
        batch, scores = _take_rows(everything, order), _take_scores(all_scores, order)
    group_ids = torch.tensor([gi for gi, g in enumerate(kept) for _ in range(g.size)], dtype=torch.long, device=run.device)
    silent = [g for g in generated if g.silent]
    sizes = [g.size for g in kept]
    metrics = {
        "budget/rollouts_generated": float(offsets[-1]),
        "budget/rollouts_used": float(len(order)),
        "budget/cumulative_rollouts": float(run.sampler.rollouts_observed),
        "budget/generation_rounds": float(rounds),
        "budget/generation_calls": float(len(calls.done)),
        "budget/prompts_drawn": float(len(generated)),
        "budget/dropped_groups": float(len(generated) - len(kept)),
        "budget/abandoned_groups": float(sum(g.abandoned for g in generated)),
        "budget/silent_group_frac": len(silent) / len(generated),
        "budget/silent_rollouts": float(sum(g.size for g in silent)),
        "budget/group_size_mean": sum(sizes) / len(sizes),
        "budget/group_size_min": float(min(sizes)),
        "budget/group_size_max": float(max(sizes)),
    }
    allocation = [
        {"group_size": g.size, "round": call, "abandoned": g.abandoned} for g in kept for call, _ in g.rows
    ]
    return StepRollouts(
        samples=[g.sample for g in kept],
        prompts=[g.prompt for g in kept],
        group_samples=[g.sample for g in kept for _ in range(g.size)],
        batch=batch,
        group_ids=group_ids,
        scores=scores,
        rewards=torch.tensor(scores.total, dtype=torch.float32, device=run.device),
        allocation=allocation,
        timings={"gen": calls.gen_s, "verify": calls.verify_s},
        metrics=metrics,
    )


def _take_rows(batch: RolloutBatch, rows: list[int]) -> RolloutBatch:
    """The given completions, in that order, with padding columns no kept row needs trimmed away."""
    idx = torch.tensor(rows, dtype=torch.long, device=batch.completion_ids.device)
    width = max(int(batch.completion_mask[idx].sum(-1).max()), 1)
    prompt_mask = batch.prompt_mask[idx]
    lead = int((prompt_mask.sum(0) == 0).long().cumprod(0).sum())  # left-padding columns empty in every kept row
    return RolloutBatch(
        prompt_ids=batch.prompt_ids[idx, lead:],
        prompt_mask=prompt_mask[:, lead:],
        completion_ids=batch.completion_ids[idx, :width],
        completion_mask=batch.completion_mask[idx, :width],
        logprobs=batch.logprobs[idx, :width],
        entropies=batch.entropies[idx, :width],
        finish_reasons=[batch.finish_reasons[i] for i in rows],
        texts=[batch.texts[i] for i in rows],
    )


def _concat_scores(parts: list[ScoreBatch]) -> ScoreBatch:
    """Join the score batches of several generation calls (every field is a list or a dict of lists)."""
    if len(parts) == 1:
        return parts[0]
    joined: dict[str, Any] = {}
    for f in dataclasses.fields(ScoreBatch):
        values = [getattr(p, f.name) for p in parts]
        if isinstance(values[0], dict):
            joined[f.name] = {k: [x for v in values for x in v[k]] for k in values[0]}
        else:
            joined[f.name] = [x for v in values for x in v]
    return ScoreBatch(**joined)


def _take_scores(scores: ScoreBatch, rows: list[int]) -> ScoreBatch:
    taken: dict[str, Any] = {}
    for f in dataclasses.fields(ScoreBatch):
        value = getattr(scores, f.name)
        if isinstance(value, dict):
            taken[f.name] = {k: [v[i] for i in rows] for k, v in value.items()}
        else:
            taken[f.name] = [value[i] for i in rows]
    return ScoreBatch(**taken)
