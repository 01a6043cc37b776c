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
from dataclasses import dataclass
from pathlib import Path

import torch

from trainer.algorithms import TOKEN_CREDIT, CreditInputs, compute_advantages
from trainer.checkpoint import checkpoints_dir, latest_checkpoint, save_checkpoint
from trainer.config import ExperimentConfig
from trainer.data import render_prompt
from trainer.device import describe
from trainer.errors import ConfigError, RLVRError
from trainer.optimize import UpdateBatch, batch_logprobs, policy_update
from trainer.reporting import rollout_records, step_metrics
from trainer.run_setup import Run, build_run
from trainer.sinks import EventSink, NullSink, RunInfo, StepReport
from trainer.verifiers.scoring import score_batch


@dataclass
class TrainResult:
    status: str  # "succeeded" | "cancelled"
    steps_done: int
    final_metrics: dict[str, float]
    output_dir: str


def training_step(run: Run, step: int) -> StepReport:
    """One GRPO-family step. Returns the step's metrics and rollout records."""
    cfg, alg = run.config, run.config.algorithm
    G = cfg.rollout.num_generations
    t0 = time.perf_counter()

    samples = run.sampler.next_batch()  # P prompts
    prompts = [render_prompt(s, cfg.data, run.tokenizer) for s in samples]
    group_samples = [s for s in samples for _ in range(G)]  # N = P * G, grouped
    batch = run.engine.generate([p for p in prompts for _ in range(G)], run.sampling, run.generator)
    group_ids = torch.arange(len(samples), device=run.device).repeat_interleave(G)  # [N]
    t_gen = time.perf_counter()

    scores = score_batch(run.verifiers, cfg.reward_weights, batch.texts, group_samples)
    rewards = torch.tensor(scores.total, dtype=torch.float32, device=run.device)  # [N]
    t_verify = time.perf_counter()

    advantages = compute_advantages(rewards, group_ids, alg)  # [N]
    loss_mask = batch.completion_mask.clone()  # [N, T]
    if alg.mask_truncated_completions:
        truncated = torch.tensor([r == "length" for r in batch.finish_reasons], device=run.device)
        loss_mask[truncated] = 0
    credit = TOKEN_CREDIT.get(alg.token_credit)
    token_advantages = credit(advantages, CreditInputs(loss_mask, batch.entropies, batch.logprobs), alg)  # [N, T]

    mb, temp = cfg.training.micro_batch_size, cfg.rollout.temperature
    old_logprobs = batch_logprobs(run.model, batch, mb, temp) if alg.num_iterations > 1 else None
    ref_logprobs = batch_logprobs(run.ref_model, batch, mb, temp) if run.ref_model is not None else None
    data = UpdateBatch(batch, token_advantages, loss_mask, old_logprobs, ref_logprobs)
    updates = [policy_update(run.model, run.optimizer, data, cfg) for _ in range(alg.num_iterations)]
    run.scheduler.step()
    t_train = time.perf_counter()

    if old_logprobs is None:  # on-policy: the first pass's logprobs are the "old" ones
        old_logprobs = updates[0].logprobs
    metrics = step_metrics(
        cfg, batch, scores, rewards, advantages, group_ids, updates,
        timings={"gen": t_gen - t0, "verify": t_verify - t_gen, "train": t_train - t_verify},
        lr=float(run.scheduler.get_last_lr()[0]),
    )
    records = rollout_records(
        step, run.tokenizer, samples, prompts, batch, scores, advantages, token_advantages,
        loss_mask, old_logprobs, ref_logprobs, G,
    )
    return StepReport(step=step, max_steps=cfg.training.max_steps, metrics=metrics, rollouts=records,
                      elapsed_s=time.perf_counter() - t0)


def _save(run: Run, step: int, sink: EventSink) -> None:
    cfg = run.config.checkpoint
    path = save_checkpoint(cfg.output_dir, run.model, run.tokenizer, run.state(step), keep=cfg.save_total_limit)
    sink.on_checkpoint(step, str(path))


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
    """
    sink = sink or NullSink()
    if resume_from is None:
        _claim_output_dir(config.checkpoint.output_dir, overwrite_output_dir)
    run = build_run(config, resume_from, log=log)
    max_steps, save_every = config.training.max_steps, config.checkpoint.save_steps
    sink.on_start(RunInfo(
        name=config.name, max_steps=max_steps, start_step=run.start_step, config=config.model_dump(mode="json"),
        num_parameters=sum(p.numel() for p in run.model.parameters()), device=describe(run.device),
    ))
    step, metrics, status = run.start_step, {}, "succeeded"
    try:
        while step < max_steps:
            if should_stop():
                status = "cancelled"
                break
            step += 1
            report = training_step(run, step)
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
