"""The stages of a training step. Each takes the step's ``StepState`` and fills its part of it; where methods
act, a stage runs the hooks that the config's chosen methods registered for it (trainer/methods/axes.py,
``STAGES``), in config order. No stage names a method.
"""

from __future__ import annotations

import time

import torch

from trainer.methods.advantages import ADVANTAGES
from trainer.methods.fusion import fuse_rewards, fuse_token_advantages
from trainer.methods.policy_losses import prepare_loss_inputs
from trainer.methods.shaping import shape_scores
from trainer.methods.token_credit import TOKEN_CREDIT
from trainer.models.device import peak_memory_gb, reset_peak_memory
from trainer.sinks import StepReport
from trainer.step.collect import collect_rollouts
from trainer.step.optimize import UpdateBatch, batch_logprobs, policy_update
from trainer.step.policy_scoring import rescore_with_policy, weighted
from trainer.step.reporting import rollout_records, step_metrics
from trainer.step.state import StepState
from trainer.step.teacher import credit_inputs, teacher_signals


def collect(state: StepState) -> None:
    """Prompts (the prompt sampler) -> completions (the allocator; dynamic sampling) -> verifier scores; in an
    asynchronous run, the background generator's rollouts for this step (trainer/step/async_rollouts.py)."""
    producer = state.run.producer
    state.collected = collect_rollouts(state.run, state.step) if producer is None else producer.take(state.step)
    state.scores = state.collected.scores
    state.timings.update(state.collected.timings)
    state.metrics.update(state.collected.metrics)


def score_with_policy(state: StepState) -> None:
    """When vLLM or an older policy sampled: the policy's own logprobs and entropies of the sampled tokens,
    and truncated importance weights for the difference (trainer/step/policy_scoring.py)."""
    state.importance = rescore_with_policy(state.run, state.batch)
    if state.importance is not None:
        state.metrics.update(state.importance.metrics)


def shape_rewards(state: StepState) -> None:
    """``reward_shaping`` hooks: label-free rewards and shaping terms, on top of the verifiers' total."""
    c = state.collected
    assert c is not None and state.scores is not None
    shaped = shape_scores(state.scores, c.batch.texts, c.batch.lengths.tolist(), c.group_ids.tolist(),
                          c.group_samples, state.run.config)
    state.scores, state.pseudo_correct = shaped.scores, shaped.pseudo_correct
    state.rewards = c.rewards.new_tensor(shaped.scores.total)  # [N]
    state.metrics.update(shaped.metrics)
    state.timings["verify_end"] = time.perf_counter()
    state.metrics["perf/gen_peak_memory_gb"] = peak_memory_gb(state.run.device)  # generation and scoring
    reset_peak_memory(state.run.device)


def score_with_teacher(state: StepState) -> None:
    """The teacher's logprobs and entropies of the sampled tokens (OPD / OPSD), when a method reads them."""
    run, c = state.run, state.collected
    assert c is not None
    state.signals = teacher_signals(run.teacher, run.config, state.step, c.batch, c.group_samples, run.tokenizer,
                                    run.micro_batch_size)


def estimate_advantages(state: StepState) -> None:
    """``reward_fusion`` hooks (the teacher meets the rewards), then the advantage estimator, then the
    ``advantage_shaping`` hooks."""
    assert state.rewards is not None
    cfg = state.run.config
    fused = fuse_rewards(state.rewards, state.signals, cfg.teacher, state.step)  # [N]
    choice = cfg.algorithm.advantage_estimator
    state.advantages = ADVANTAGES.get(choice.name)(fused, state.group_ids, choice.params, state.batch.lengths)
    for method in state.methods:
        hook = method.hook("advantage_shaping")
        if hook is not None:
            state.advantages, metrics = hook(state.advantages, state.batch.texts, state.pseudo_correct,
                                             state.group_ids, method.params)
            state.metrics.update(metrics)


def build_loss_mask(state: StepState) -> None:
    """Completion tokens, minus truncated completions (mask_truncated_completions), minus what each
    ``loss_mask`` hook takes out."""
    batch, alg = state.batch, state.run.config.algorithm
    loss_mask = batch.completion_mask.clone()  # [N, T]
    if alg.mask_truncated_completions:
        truncated = torch.tensor([r == "length" for r in batch.finish_reasons], device=loss_mask.device)
        loss_mask[truncated] = 0
    for method in state.methods:
        hook = method.hook("loss_mask")
        if hook is not None:
            loss_mask *= hook(batch, state.run.tokenizer, method.params).to(loss_mask.dtype)
    state.loss_mask = loss_mask


def assign_token_credit(state: StepState) -> None:
    """Token credit (per-token advantages), ``token_fusion`` hooks, then the ``loss_inputs`` hooks."""
    assert state.advantages is not None and state.loss_mask is not None
    cfg = state.run.config
    choice = cfg.algorithm.token_credit
    inputs = credit_inputs(state.loss_mask, state.batch, state.signals)
    token_advantages = TOKEN_CREDIT.get(choice.name)(state.advantages, inputs, choice.params)  # [N, T]
    token_advantages = fuse_token_advantages(token_advantages, state.loss_mask, state.signals, cfg.teacher, state.step)
    loss_inputs = prepare_loss_inputs(state.advantages, token_advantages, state.batch.entropies, state.loss_mask,
                                      state.methods)
    state.token_advantages, state.extras = loss_inputs.token_advantages, loss_inputs.extras
    state.segment_ids = loss_inputs.segment_ids
    state.metrics.update(loss_inputs.metrics)


def update_policy(state: StepState) -> None:
    """Old and reference logprobs, then ``num_iterations`` optimizer steps (policy loss, aggregation and
    regularizer are looked up by the chosen names inside ``policy_update``)."""
    run, cfg = state.run, state.run.config
    assert state.token_advantages is not None and state.loss_mask is not None
    mb, batch = run.micro_batch_size, state.batch
    state.old_logprobs = (batch_logprobs(run.model, batch, mb, cfg.rollout.temperature)
                          if cfg.algorithm.num_iterations > 1 else None)
    state.ref_logprobs = run.reference_logprobs(batch)
    data = UpdateBatch(batch, weighted(state.token_advantages, state.importance), state.loss_mask,
                       state.old_logprobs, state.ref_logprobs, state.extras)
    state.updates = [policy_update(run.model, run.optimizer, data, cfg, run.dist, mb)
                     for _ in range(cfg.algorithm.num_iterations)]
    run.scheduler.step()
    run.after_update(state.step)
    state.timings["train"] = time.perf_counter() - state.timings.pop("verify_end")
    if state.old_logprobs is None:  # on-policy: the first pass's logprobs are the "old" ones
        state.old_logprobs = state.updates[0].logprobs


def report(state: StepState) -> None:
    """The step's metrics and its rollout records (what the dashboard's token view shows)."""
    run, cfg, c = state.run, state.run.config, state.collected
    assert c is not None and state.scores is not None and state.rewards is not None and state.advantages is not None
    assert state.token_advantages is not None and state.loss_mask is not None and state.old_logprobs is not None
    metrics = step_metrics(
        cfg, c.batch, state.scores, state.rewards, state.advantages, c.group_ids, state.updates,
        timings=state.timings, lr=float(run.scheduler.get_last_lr()[0]), teacher=state.signals, step=state.step,
    )
    metrics.update(state.metrics)
    update_peak_gb = peak_memory_gb(run.device)  # teacher / reference passes and the policy update
    gen_peak_gb = metrics["perf/gen_peak_memory_gb"]
    metrics.update({"perf/update_peak_memory_gb": update_peak_gb, "perf/peak_memory_gb": max(gen_peak_gb, update_peak_gb)})
    records = rollout_records(
        state.step, run.tokenizer, c.samples, c.prompts, c.batch, state.scores, state.advantages,
        state.token_advantages, state.loss_mask, state.old_logprobs, state.ref_logprobs, c.group_ids, c.allocation,
        teacher=state.signals, segment_ids=state.segment_ids,
    )
    state.report = StepReport(step=state.step, max_steps=cfg.training.max_steps, metrics=metrics, rollouts=records,
                              elapsed_s=time.perf_counter() - state.started)
