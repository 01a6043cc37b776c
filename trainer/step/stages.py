"""The stages of a training step (trainer/step/step.py calls them in order). Each takes the run, the step and the
values of the earlier stages it reads, and returns its own frozen value (trainer/step/state.py). Where methods
act, a stage calls the hook points it owns (trainer/methods/axes.py ``HOOK_POINTS``), directly or through the
helper named in its docstring; no stage names a method.
"""

from __future__ import annotations

import dataclasses
import time

import torch

from trainer.environments.runner import episodes_of
from trainer.errors import ConfigError
from trainer.methods.advantages import compute_advantages
from trainer.methods.axes import hooks_at, the_hook
from trainer.methods.fusion import fuse_rewards, fuse_token_advantages
from trainer.methods.policy_losses import prepare_loss_inputs
from trainer.methods.shaping import shape_scores
from trainer.methods.step_credit import StepCreditInputs
from trainer.methods.turn_credit import apply_turn_credit, turn_credit_inputs
from trainer.models.device import peak_memory_gb, reset_peak_memory
from trainer.rollout import RolloutBatch
from trainer.sinks import StepReport
from trainer.step.collect import StepRollouts, collect_rollouts
from trainer.step.optimize import UpdateBatch, UpdateStats, batch_logprobs, policy_update
from trainer.step.policy_scoring import rescore_with_policy, weighted
from trainer.step.reporting import rollout_records, step_metrics
from trainer.step.run_setup import Run
from trainer.step.state import (
    Advantages,
    LossMask,
    PolicyScores,
    ShapedRewards,
    StepOutcome,
    StepScores,
    TokenCredit,
    Update,
)
from trainer.step.teacher import TeacherSignals, credit_inputs, teacher_signals


def collect(run: Run, step: int) -> StepRollouts:
    """Prompts (``prompt_sampler``, built with the run) -> completions (``allocator``; dynamic sampling) -> verifier
    scores (trainer/step/collect.py); in an asynchronous run, the background generator's rollouts for this step
    (trainer/step/async_rollouts.py)."""
    return collect_rollouts(run, step) if run.producer is None else run.producer.take(step)


def score_with_policy(run: Run, step: int, collected: StepRollouts) -> PolicyScores:
    """When vLLM or an older policy sampled: the policy's own logprobs and entropies of the sampled tokens, and
    truncated importance weights for the difference (trainer/step/policy_scoring.py); left to the update's forward
    when no stage before it reads them (``PolicyScores.deferred``)."""
    return rescore_with_policy(run, collected.batch, step)


def score_steps(run: Run, step: int, collected: StepRollouts, scored: PolicyScores) -> StepScores | None:
    """``process_reward``: each completion's steps (its segmenter) and their scores (its step scorer,
    trainer/process/); None when the config has no process_reward section. Monte Carlo continues step prefixes
    through the run's engine with a generator of its own, seeded from (seed, step), so the run's sampling random
    numbers are untouched. The implicit PRM (``run.scorer_state``) is scored, then updated on this step's outcome
    labels, here."""
    cfg = run.config.process_reward
    if cfg is None:
        return None
    from trainer.process.records import chain_params_of, score_process
    from trainer.process.scorers import ScorerContext

    batch, lengths = scored.batch, [int(n) for n in scored.batch.lengths.tolist()]
    token_ids = [row[:n] for row, n in zip(batch.completion_ids.tolist(), lengths, strict=True)]
    group_ids = collected.group_ids.tolist()
    context = ScorerContext(
        params=None,
        tokenizer=run.tokenizer,
        prompts=[collected.prompts[g] for g in group_ids],
        correct=list(collected.scores.correct),
        micro_batch_size=run.micro_batch_size,
        chain_params=chain_params_of(run.verifiers),
        state=run.scorer_state,
    )
    if cfg.scorer.name == "implicit":  # the implicit PRM reads the prompt tokens the policy saw
        context.prompt_ids = [
            row[mask.bool()].tolist() for row, mask in zip(batch.prompt_ids, batch.prompt_mask, strict=True)
        ]
        context.dropped = list(collected.dropped) or None
    if cfg.scorer.name == "monte_carlo":
        if run.producer is not None:
            raise ConfigError(
                "process_reward.scorer 'monte_carlo' samples through the run's engine, which the background "
                "generator of an asynchronous run owns: set training.max_off_policy_steps to 0"
            )
        context.engine, context.sampling, context.verifier = run.engine, run.sampling, run.verifiers[0][1]
        context.generator = torch.Generator(device=run.generator.device).manual_seed(
            (run.config.seed * 1_000_003 + step) % 2**63
        )
    result = score_process(
        cfg, token_ids, batch.texts, batch.entropies.tolist(), collected.group_samples, context
    )
    return StepScores(result.spans, result.scores, result.detail, result.metrics)


def shape_rewards(run: Run, step: int, collected: StepRollouts) -> ShapedRewards:
    """``reward_shaping`` (in ``shape_scores``): label-free rewards and shaping terms, on top of the verifiers'
    total. Ends generation and scoring: their peak memory is read here, and the update's clock starts."""
    c = collected
    shaped = shape_scores(
        c.scores,
        c.batch.texts,
        c.batch.lengths.tolist(),
        c.group_ids.tolist(),
        c.group_samples,
        run.config,
        step,
    )
    finished_at = time.perf_counter()
    gen_peak_gb = peak_memory_gb(run.device)  # generation and scoring
    reset_peak_memory(run.device)
    return ShapedRewards(
        scores=shaped.scores,
        rewards=c.rewards.new_tensor(shaped.scores.total),  # [N]
        pseudo_correct=shaped.pseudo_correct,
        metrics=shaped.metrics,
        gen_peak_memory_gb=gen_peak_gb,
        finished_at=finished_at,
    )


def score_with_teacher(
    run: Run, step: int, collected: StepRollouts, scored: PolicyScores
) -> TeacherSignals | None:
    """The teacher's logprobs and entropies of the sampled tokens (OPD / OPSD), when a method reads them (the
    ``needs_teacher`` query, in trainer/step/teacher.py)."""
    return teacher_signals(
        run.teacher,
        run.config,
        step,
        scored.batch,
        collected.group_samples,
        run.tokenizer,
        run.micro_batch_size,
    )


def estimate_advantages(
    run: Run,
    step: int,
    collected: StepRollouts,
    scored: PolicyScores,
    shaped: ShapedRewards,
    signals: TeacherSignals | None,
) -> Advantages:
    """``reward_fusion`` (the teacher meets the rewards, in ``fuse_rewards``), then ``advantage`` (the estimator,
    in ``compute_advantages``), then the ``advantage_shaping`` hooks. Completions dropped for an absent score
    (``reward_absence``) are left out of their groups' statistics and keep advantage 0."""
    cfg, group_ids, batch = run.config, collected.group_ids, scored.batch
    kept = _kept(collected)  # [N] bool, None when nothing was dropped
    fused = fuse_rewards(shaped.rewards, signals, cfg.teacher, step)  # [N]
    advantages = compute_advantages(fused, group_ids, cfg.algorithm, batch.lengths, present=kept)  # [N]
    metrics: dict[str, float] = {}
    for hook, params in hooks_at("advantage_shaping", run.methods, step):
        advantages, more = hook(advantages, batch.texts, shaped.pseudo_correct, group_ids, params)
        metrics.update(more)
    if kept is not None:
        advantages = advantages * kept  # shaping hooks see whole groups; a dropped completion still gets 0
    return Advantages(advantages, metrics)


def _kept(collected: StepRollouts) -> torch.Tensor | None:
    """[N] bool: the completions not dropped for an absent score (None: none dropped)."""
    if not any(collected.dropped):
        return None
    return ~torch.tensor(collected.dropped, dtype=torch.bool, device=collected.rewards.device)


def build_loss_mask(run: Run, step: int, collected: StepRollouts, scored: PolicyScores) -> LossMask:
    """Completion tokens, minus truncated completions (mask_truncated_completions), minus completions dropped for
    an absent score (``reward_absence``), minus what each ``loss_mask`` hook takes out."""
    batch = scored.batch
    loss_mask = batch.completion_mask.clone()  # [N, T]
    if batch.model_mask is not None:  # multi-turn: the environment's tokens are never trained
        loss_mask *= batch.model_mask.to(loss_mask.dtype)
    if run.config.algorithm.mask_truncated_completions:
        truncated = torch.tensor([r == "length" for r in batch.finish_reasons], device=loss_mask.device)
        loss_mask[truncated] = 0
    kept = _kept(collected)
    if kept is not None:
        loss_mask[~kept] = 0
    for hook, params in hooks_at("loss_mask", run.methods, step):
        loss_mask *= hook(batch, run.tokenizer, params).to(loss_mask.dtype)
    return LossMask(loss_mask)


def assign_token_credit(
    run: Run,
    step: int,
    scored: PolicyScores,
    advantages: Advantages,
    loss_mask: LossMask,
    signals: TeacherSignals | None,
    steps: StepScores | None = None,
    shaped: ShapedRewards | None = None,
    collected: StepRollouts | None = None,
) -> TokenCredit:
    """``token_credit`` (per-token advantages), ``turn_credit`` (multi-turn episodes: in ``apply_turn_credit``),
    ``step_credit`` (process credit, when ``process_reward`` is set
    and ``steps`` were scored: in ``add_step_credit``), ``token_fusion`` (in ``fuse_token_advantages``), then the
    ``loss_inputs`` hooks (in ``prepare_loss_inputs``). A row PROF's filter drops leaves the loss mask here."""
    cfg, batch, mask = run.config, scored.batch, loss_mask.mask
    credit, params = the_hook("token_credit", cfg.algorithm.token_credit.active())
    token_advantages = credit(advantages.values, credit_inputs(mask, batch, signals), params)  # [N, T]
    process_metrics: dict[str, float] = {}
    turn_metrics: dict[str, float] = {}
    episodes = episodes_of(collected.scores.details) if collected is not None else None
    if (
        collected is not None and episodes is not None
    ):  # multi-turn: turn credit (trainer/methods/turn_credit.py)
        turns = turn_credit_inputs(episodes, collected.group_ids, mask, collected.rewards)
        token_advantages, turn_metrics = apply_turn_credit(token_advantages, turns, run.methods, step)
    if steps is not None:
        if shaped is None or collected is None:
            raise TypeError(
                "assign_token_credit: step credit reads the outcomes (shaped) and the groups (collected)"
            )
        token_advantages, process_metrics = add_step_credit(
            run, step, token_advantages, mask, steps, shaped, collected
        )
    token_advantages = fuse_token_advantages(token_advantages, mask, signals, cfg.teacher, step)
    inputs = prepare_loss_inputs(
        advantages.values, token_advantages, batch.entropies, mask, run.methods, step
    )
    metrics = {**inputs.metrics, **process_metrics, **turn_metrics}
    return TokenCredit(inputs.token_advantages, inputs.extras, inputs.segment_ids, metrics)


def add_step_credit(
    run: Run,
    step: int,
    token_advantages: torch.Tensor,
    mask: torch.Tensor,
    steps: StepScores,
    shaped: ShapedRewards,
    collected: StepRollouts,
) -> tuple[torch.Tensor, dict[str, float]]:
    """The ``step_credit`` hooks (trainer/methods/step_credit.py): process credit on top of the outcome's token
    advantages. A hook's ``keep`` rows (PROF's filter) are zeroed in ``mask`` in place: the loss mask the update
    and the report read. Nothing without a ``process_reward`` section."""
    cfg = run.config.process_reward
    if cfg is None:
        return token_advantages, {}
    inputs = StepCreditInputs(
        spans=steps.spans,
        scores=steps.scores,
        rewards=shaped.rewards,
        correct=torch.tensor(shaped.pseudo_correct, dtype=torch.bool, device=mask.device),
        group_ids=collected.group_ids,
        mask=mask,
        config=cfg,
    )
    metrics: dict[str, float] = {}
    for hook, params in hooks_at("step_credit", run.methods, step):
        out = hook(token_advantages, inputs, params)
        token_advantages = out.token_advantages  # [N, T]
        if out.keep is not None:
            mask[~out.keep] = 0
        metrics.update(out.metrics)
    return token_advantages, metrics


def update_policy(
    run: Run, step: int, scored: PolicyScores, loss_mask: LossMask, credit: TokenCredit, shaped: ShapedRewards
) -> Update:
    """Old and reference logprobs, then ``num_iterations`` optimizer steps (``policy_loss``, ``aggregation`` and
    ``regularizer``, in ``policy_update``); the weights are then handed to whatever samples with its own copy."""
    cfg, batch, mb = run.config, scored.batch, run.micro_batch_size
    old_logprobs = (
        batch_logprobs(run.model, batch, mb, cfg.rollout.temperature)
        if cfg.algorithm.num_iterations > 1
        else None
    )
    ref_logprobs = run.reference_logprobs(batch)
    data = UpdateBatch(
        batch,
        weighted(credit.token_advantages, scored.importance),
        loss_mask.mask,
        old_logprobs,
        ref_logprobs,
        credit.extras,
        rescore_cap=cfg.training.importance_cap if scored.deferred else None,
    )
    passes = tuple(
        policy_update(run.model, run.optimizer, data, cfg, run.dist, mb)
        for _ in range(cfg.algorithm.num_iterations)
    )
    run.scheduler.step()
    run.after_update(step)
    train_s = time.perf_counter() - shaped.finished_at
    return Update(
        passes=passes,
        old_logprobs=passes[0].logprobs if old_logprobs is None else old_logprobs,
        ref_logprobs=ref_logprobs,
        lr=float(run.scheduler.get_last_lr()[0]),
        train_s=train_s,
        scored=_scored_by_update(batch, passes[0]) if scored.deferred else None,
    )


def _scored_by_update(batch: RolloutBatch, first: UpdateStats) -> PolicyScores:
    """The policy's scores of a batch whose rescoring the update did (``PolicyScores.deferred``), as the rescoring
    stage would have returned them."""
    if first.entropies is None:
        raise TypeError("a deferred rescoring needs the update's per-token entropies")
    mask = batch.completion_mask.to(first.logprobs.dtype)
    rescored = dataclasses.replace(batch, logprobs=first.logprobs * mask, entropies=first.entropies * mask)
    return PolicyScores(rescored, first.importance)


def report(run: Run, outcome: StepOutcome) -> StepReport:
    """The step's metrics and its rollout records (what the dashboard's token view shows)."""
    cfg, o = run.config, outcome
    metrics = step_metrics(
        cfg,
        o.scored.batch,
        o.shaped.scores,
        o.shaped.rewards,
        o.advantages.values,
        o.collected.group_ids,
        o.update.passes,
        timings=o.timings,
        lr=o.update.lr,
        teacher=o.signals,
        step=o.step,
    )
    for part in (o.collected.metrics, o.scored.metrics, o.shaped.metrics):
        metrics.update(part)
    metrics["perf/gen_peak_memory_gb"] = o.shaped.gen_peak_memory_gb
    metrics.update(o.advantages.metrics)
    metrics.update(o.credit.metrics)
    if o.steps is not None:  # process/*; Monte Carlo's continuations count as generated tokens
        metrics.update({k: v for k, v in o.steps.metrics.items()})
        metrics["budget/tokens_generated"] = metrics.get(
            "budget/tokens_generated", 0.0
        ) + o.steps.metrics.get("process/mc_tokens", 0.0)
    update_peak_gb = peak_memory_gb(run.device)  # teacher / reference passes and the policy update
    metrics.update(
        {
            "perf/update_peak_memory_gb": update_peak_gb,
            "perf/peak_memory_gb": max(o.shaped.gen_peak_memory_gb, update_peak_gb),
        }
    )
    return StepReport(
        step=o.step,
        max_steps=cfg.training.max_steps,
        metrics=metrics,
        rollouts=rollout_records(o, run.tokenizer),
        elapsed_s=time.perf_counter() - o.started,
    )
