"""The training loop: ``train(config, sink)`` and the one step function it repeats.

Each step, top to bottom: sample prompts -> generate G completions each -> verify -> advantages ->
token credit -> old / reference logprobs -> policy update(s) -> report. Everything algorithmic is looked
up in a registry by its config name, so methods plug in without edits here.
"""

from __future__ import annotations

import shutil
import time
import traceback
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

import torch

from trainer.algorithms import TOKEN_CREDIT, compute_advantages
from trainer.algorithms.answer_span import answer_span_token_mask
from trainer.algorithms.fusion import fuse_rewards, fuse_token_advantages
from trainer.algorithms.policy_losses import prepare_loss_inputs
from trainer.algorithms.rarity import rarity_advantages
from trainer.algorithms.shaping import shape_scores
from trainer.checkpoint import checkpoints_dir, latest_checkpoint, save_checkpoint
from trainer.collect import collect_rollouts
from trainer.config import ExperimentConfig
from trainer.device import autocast, describe, peak_memory_gb, reset_peak_memory
from trainer.distributed import fault_point, in_rank
from trainer.divergence import divergence_message, is_nan_sampling_error
from trainer.errors import ConfigError, RLVRError, TrainingDiverged
from trainer.evaluate import PeriodicEvaluation
from trainer.fsdp import full_model_state_dict, full_optimizer_state_dict, is_sharded
from trainer.optimize import NonFiniteUpdate, UpdateBatch, batch_logprobs, policy_update
from trainer.reporting import rollout_records, step_metrics
from trainer.run_setup import Run, build_run
from trainer.sinks import EventSink, NullSink, RunInfo, StepReport, TrainResult
from trainer.teacher import credit_inputs, teacher_signals


def training_step(run: Run, step: int) -> StepReport:
    """One GRPO-family step. Returns the step's metrics and rollout records."""
    cfg, alg = run.config, run.config.algorithm
    t0 = time.perf_counter()

    collected = collect_rollouts(run, step)  # prompts -> completions (allocator, dynamic sampling) -> scores
    samples, prompts, batch, group_ids = collected.samples, collected.prompts, collected.batch, collected.group_ids
    scores, rewards = collected.scores, collected.rewards  # [N]; groups may differ in size
    shaped = shape_scores(scores, batch.texts, batch.lengths.tolist(), group_ids.tolist(), collected.group_samples, cfg)
    scores, rewards = shaped.scores, rewards.new_tensor(shaped.scores.total)  # label-free reward, length shaping
    t_verify = time.perf_counter()
    gen_peak_gb = peak_memory_gb(run.device)  # generation and scoring (the loop reset the window at step start)
    reset_peak_memory(run.device)

    signals = teacher_signals(run.teacher, cfg, step, batch, collected.group_samples, run.tokenizer,
                              run.micro_batch_size)  # OPD / OPSD
    fused = fuse_rewards(rewards, signals, cfg.teacher, step)  # [N]
    advantages = compute_advantages(fused, group_ids, alg, batch.lengths)  # [N]; reinforce_pp weighs by length
    advantages, rarity_metrics = rarity_advantages(advantages, batch.texts, shaped.pseudo_correct, group_ids, cfg.shaping)
    loss_mask = batch.completion_mask.clone()  # [N, T]
    if alg.mask_truncated_completions:
        truncated = torch.tensor([r == "length" for r in batch.finish_reasons], device=run.device)
        loss_mask[truncated] = 0
    if alg.answer_span_mask:  # OM-GRPO (001:L73): no gradient on the answer span
        loss_mask *= answer_span_token_mask(batch.completion_ids, batch.lengths.tolist(), batch.texts, run.tokenizer,
                                            alg.answer_span_pattern).to(loss_mask.dtype)
    credit = TOKEN_CREDIT.get(alg.token_credit)
    token_advantages = credit(advantages, credit_inputs(loss_mask, batch, signals), alg)  # [N, T]
    token_advantages = fuse_token_advantages(token_advantages, loss_mask, signals, cfg.teacher, step)  # [N, T]
    loss_inputs = prepare_loss_inputs(advantages, token_advantages, batch.entropies, loss_mask, alg)  # HISPO, GAPO
    token_advantages = loss_inputs.token_advantages

    mb, temp = run.micro_batch_size, cfg.rollout.temperature
    old_logprobs = batch_logprobs(run.model, batch, mb, temp) if alg.num_iterations > 1 else None
    ref_logprobs = run.reference_logprobs(batch)
    data = UpdateBatch(batch, token_advantages, loss_mask, old_logprobs, ref_logprobs, loss_inputs.extras)
    updates = [policy_update(run.model, run.optimizer, data, cfg, run.dist, mb) for _ in range(alg.num_iterations)]
    run.scheduler.step()
    run.after_update()
    t_train = time.perf_counter()

    if old_logprobs is None:  # on-policy: the first pass's logprobs are the "old" ones
        old_logprobs = updates[0].logprobs
    metrics = step_metrics(
        cfg, batch, scores, rewards, advantages, group_ids, updates,
        timings={**collected.timings, "train": t_train - t_verify},
        lr=float(run.scheduler.get_last_lr()[0]), teacher=signals, step=step,
    )
    metrics.update(collected.metrics)
    metrics.update({**shaped.metrics, **rarity_metrics, **loss_inputs.metrics})
    update_peak_gb = peak_memory_gb(run.device)  # teacher / reference passes and the policy update
    metrics.update({"perf/gen_peak_memory_gb": gen_peak_gb, "perf/update_peak_memory_gb": update_peak_gb,
                    "perf/peak_memory_gb": max(gen_peak_gb, update_peak_gb)})
    records = rollout_records(
        step, run.tokenizer, samples, prompts, batch, scores, advantages, token_advantages,
        loss_mask, old_logprobs, ref_logprobs, group_ids, collected.allocation, teacher=signals,
        segment_ids=loss_inputs.segment_ids,
    )
    return StepReport(step=step, max_steps=cfg.training.max_steps, metrics=metrics, rollouts=records,
                      elapsed_s=time.perf_counter() - t0)


def _guarded_step(run: Run, step: int, previous: dict[str, float]) -> StepReport:
    """``training_step``, with NaN / infinity (in the update, or in sampling on blown-up weights) turned into
    ``TrainingDiverged`` naming the step and the fix; ``previous`` is the last step's metrics. The run stops
    there: no optimizer step is taken on NaN gradients and no checkpoint of broken weights is written."""
    try:
        return training_step(run, step)
    except NonFiniteUpdate as err:
        raise TrainingDiverged(divergence_message(run.config, step, err.what, err.grad_norm)) from err
    except RuntimeError as err:
        if not is_nan_sampling_error(err):
            raise
        what = "the sampling probabilities became NaN or infinite"
        norm = previous.get("actor/grad_norm")
        raise TrainingDiverged(divergence_message(run.config, step, what, norm, step - 1)) from err


def _save(run: Run, step: int, sink: EventSink) -> None:
    """Save a checkpoint; in a data-parallel run only rank 0 writes (the ranks hold identical weights and
    optimizer states) and every rank waits for it, so a resume finds the checkpoint complete. A sharded model's
    full weights and optimizer state are first gathered by every rank (trainer/fsdp.py), so the checkpoint
    is the same as an unsharded run's."""
    cfg = run.config.checkpoint
    sharded = is_sharded(run.model)
    weights = full_model_state_dict(run.model) if sharded else None
    optimizer = full_optimizer_state_dict(run.model, run.optimizer) if sharded else None
    if run.dist is None or run.dist.is_main:
        state = run.state(step) if optimizer is None else replace(run.state(step), optimizer=optimizer)
        path = save_checkpoint(cfg.output_dir, run.model, run.tokenizer, state, keep=cfg.save_total_limit,
                               model_state_dict=weights)
        sink.on_checkpoint(step, str(path))
    if run.dist is not None:
        run.dist.barrier()


def _claim_output_dir(output_dir: str, overwrite: bool) -> None:
    if latest_checkpoint(output_dir) is None:
        return
    if not overwrite:
        raise ConfigError(
            f"{output_dir} already holds checkpoints of another run: continue it with --resume {output_dir}, "
            "pick a new checkpoint.output_dir, or pass --overwrite to delete them"
        )
    shutil.rmtree(checkpoints_dir(output_dir))


def train(
    config: ExperimentConfig,
    sink: EventSink | None = None,
    should_stop: Callable[[], bool] = lambda: False,
    resume_from: str | Path | None = None,
    log: Callable[[str], None] = print,
    overwrite_output_dir: bool = False,
) -> TrainResult:
    """Run (or resume) training to ``config.training.max_steps``.

    A fresh run refuses an output directory that already holds checkpoints (they would be mixed with
    the new run's) unless ``overwrite_output_dir`` is set, which deletes them first.

    ``should_stop`` is polled at every step boundary; when it returns True the run saves a checkpoint
    and ends with status 'cancelled' (resumable). Errors are reported to ``sink.on_error`` and re-raised.

    With ``training.num_processes`` N > 1 this process launches N ranks under torchrun and relays rank 0's
    events to ``sink`` (trainer/dist_launch.py); inside a rank it trains that rank's share of every step.
    """
    sink = sink or NullSink()
    if resume_from is None and not in_rank():  # the launcher claimed it before starting the ranks
        _claim_output_dir(config.checkpoint.output_dir, overwrite_output_dir)
    if config.training.num_processes > 1 and not in_rank():
        from trainer.dist_launch import launch

        return launch(config, sink, should_stop, resume_from, log)
    run = build_run(config, resume_from, log=log)
    dist = run.dist
    periodic_eval = PeriodicEvaluation(config.evaluation)  # eval/<benchmark>/<metric> every eval_every steps
    max_steps, save_every = config.training.max_steps, config.checkpoint.save_steps
    sink.on_start(RunInfo(
        name=config.name, max_steps=max_steps, start_step=run.start_step, config=config.model_dump(mode="json"),
        num_parameters=sum(p.numel() for p in run.model.parameters()),
        device=describe(run.device) + (f" x {dist.world_size} processes" if dist else "")
        + (" (fsdp)" if is_sharded(run.model) else ""),
    ))
    step, status = run.start_step, "succeeded"
    metrics: dict[str, float] = {}
    try:
        while step < max_steps:
            stop = should_stop()
            if dist is not None:  # rank 0 decides, so every rank stops at the same boundary
                stop = dist.broadcast_flag(stop)
            if stop:
                status = "cancelled"
                break
            step += 1
            fault_point(dist, step)
            reset_peak_memory(run.device)
            with autocast(run.device, config.model.autocast_bf16):  # generation, scoring passes and the update
                report = _guarded_step(run, step, metrics)
            if run.memory_plan is not None:
                report.metrics.update(run.memory_plan.metrics())
            if periodic_eval.due(step):  # every rank evaluates (same weights), so none waits in a collective
                report.metrics.update(periodic_eval.metrics(run.model, run.tokenizer))
            if dist is not None:  # rank 0: metrics combined, every rank's rollout records
                report = dist.gather_report(report, dist.share(config.training.prompts_per_step).start)
            metrics = report.metrics
            sink.on_step(report)
            if save_every and step % save_every == 0 and step < max_steps:
                _save(run, step, sink)
        if step > run.start_step or status == "cancelled":
            _save(run, step, sink)
    except Exception as err:
        message = str(err) if isinstance(err, RLVRError) else f"{type(err).__name__}: {err}"
        sink.on_error(message, traceback.format_exc())
        raise
    sink.on_end(status, metrics)
    return TrainResult(status=status, steps_done=step, final_metrics=metrics, output_dir=config.checkpoint.output_dir)
