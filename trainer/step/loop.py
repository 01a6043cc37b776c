"""The training loop: ``train(config, sink)`` repeats ``training_step`` (trainer/step/step.py, the list of
stages) and handles what spans steps: start and resume, cancellation, checkpoints, periodic evaluation,
divergence, and data-parallel launch.
"""

from __future__ import annotations

import shutil
import traceback
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

from trainer.config import ExperimentConfig
from trainer.distributed.context import fault_point, in_rank
from trainer.distributed.fsdp import full_model_state_dict, full_optimizer_state_dict, is_sharded
from trainer.distributed.rendezvous import NodeSpec
from trainer.errors import ConfigError, RLVRError, TrainingDiverged
from trainer.evaluation.engine import PeriodicEvaluation
from trainer.models.checkpoint import checkpoints_dir, latest_checkpoint, save_checkpoint
from trainer.models.device import autocast, describe, reset_peak_memory
from trainer.rewards.hacking import WARNING_KIND, HackingFlag
from trainer.sinks import (
    EventSink,
    NullSink,
    PhaseCallback,
    RunInfo,
    StepReport,
    TrainResult,
    warning_listener,
)
from trainer.step.async_rollouts import checkpoint_async, produced_to_device
from trainer.step.divergence import divergence_message, is_nan_sampling_error
from trainer.step.generator_process import start_producer
from trainer.step.optimize import NonFiniteUpdate
from trainer.step.run_setup import Run, build_run
from trainer.step.step import training_step


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
    full weights and optimizer state are first gathered by every rank (trainer/distributed/fsdp.py), so the checkpoint
    is the same as an unsharded run's."""
    cfg = run.config.checkpoint
    sharded = is_sharded(run.model)
    weights = full_model_state_dict(run.model) if sharded else None
    optimizer = full_optimizer_state_dict(run.model, run.optimizer) if sharded else None
    # an asynchronous run: every rank's rollouts already generated for later steps, and the generator's state
    pending = checkpoint_async(run, step)
    if run.dist is None or run.dist.is_main:
        state = run.state(step) if optimizer is None else replace(run.state(step), optimizer=optimizer)
        if pending is not None:
            buffered, sampler_state, sampling_rng = pending
            state = replace(
                state,
                sampler=sampler_state,
                rng={**state.rng, "sampling": sampling_rng},
                rollout_buffer=buffered,
            )
        path = save_checkpoint(
            cfg.output_dir,
            run.model,
            run.tokenizer,
            state,
            keep=cfg.save_total_limit,
            model_state_dict=weights,
            extra_models=None if run.scorer_state is None else run.scorer_state.checkpoint_models(),
        )
        sink.on_checkpoint(step, str(path))
    if run.dist is not None:
        run.dist.barrier()


def _watch_rewards(run: Run, report: StepReport) -> HackingFlag | None:
    """reward_watch (trainer/rewards/hacking.py): ``watch/hacking`` on every step; the flag at the step it fires."""
    if run.watch is None:
        return None
    flag = run.watch.observe(report.step, report.metrics)
    report.metrics.update(run.watch.metrics())
    return flag


def _warn(sink: EventSink, step: int, kind: str, message: str) -> None:
    listener = warning_listener(sink)  # optional: a sink written before warnings existed does not hear them
    if listener is not None:
        listener(step, kind, message)


def _phase_listener(sink: EventSink) -> PhaseCallback | None:
    """``sink.on_phase``, or None for a sink written before phases existed: it keeps hearing the steps as
    before (a library user's sink, or the recorders in older tests), just not the model build."""
    return getattr(sink, "on_phase", None)


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
    node: NodeSpec | None = None,
) -> TrainResult:
    """Run (or resume) training to ``config.training.max_steps``.

    A fresh run refuses an output directory that already holds checkpoints (they would be mixed with
    the new run's) unless ``overwrite_output_dir`` is set, which deletes them first.

    Before step 1, a built-in model that is not cached yet is built (minutes); its progress reaches
    ``sink.on_phase`` as throttled ``building_model`` reports, so a watcher sees why no step has come.

    ``should_stop`` is polled at every step boundary; when it returns True the run saves a checkpoint
    and ends with status 'cancelled' (resumable). Errors are reported to ``sink.on_error`` and re-raised.

    With ``training.num_processes`` N > 1 this process launches N ranks under torchrun and relays rank 0's
    events to ``sink`` (trainer/distributed/launch.py); inside a rank it trains that rank's share of every step.
    """
    sink = sink or NullSink()
    if resume_from is None and not in_rank():  # the launcher claimed it before starting the ranks
        _claim_output_dir(config.checkpoint.output_dir, overwrite_output_dir)
    if config.training.num_nodes > 1 and node is None and not in_rank():
        raise ConfigError(
            f"training.num_nodes is {config.training.num_nodes}: this run spans several hosts, so each host must "
            "start its part and meet the others at a rendezvous; send it to the Celery training workers, or "
            "start it with torchrun on every node (docs/multi_node.md), or set training.num_nodes 1"
        )
    if (config.training.num_processes > 1 or node is not None) and not in_rank():
        from trainer.distributed.launch import launch

        # node: this host's part of a run over training.num_nodes hosts (trainer/distributed/rendezvous.py)
        return launch(config, sink, should_stop, resume_from, log, node)
    run = build_run(
        config, resume_from, log=log, on_phase=_phase_listener(sink)
    )  # a first-use model build reports here
    try:
        return _train_run(run, config, sink, should_stop, log)
    finally:
        run.close()  # the background generator, a rollout server this run started


def _train_run(
    run: Run,
    config: ExperimentConfig,
    sink: EventSink,
    should_stop: Callable[[], bool],
    log: Callable[[str], None],
) -> TrainResult:
    dist = run.dist
    periodic_eval = PeriodicEvaluation(
        config.evaluation
    )  # eval/<benchmark>/<metric> every eval_every steps (and at 0)
    max_steps, save_every = config.training.max_steps, config.checkpoint.save_steps
    sink.on_start(
        RunInfo(
            name=config.name,
            max_steps=max_steps,
            start_step=run.start_step,
            config=config.model_dump(mode="json"),
            num_parameters=sum(p.numel() for p in run.model.parameters()),
            device=describe(run.device)
            + (f" x {dist.world_size} processes" if dist else "")
            + (" (fsdp)" if is_sharded(run.model) else ""),
        )
    )
    step, status = run.start_step, "succeeded"
    metrics: dict[str, float] = {}
    run.progress.start()  # perf/elapsed_s counts training, not the model build before it
    try:
        if periodic_eval.at_start and run.start_step == 0:  # step 0: the policy before its first update
            start = StepReport(
                step=0,
                max_steps=max_steps,
                metrics=periodic_eval.metrics(run.model, run.tokenizer),
                rollouts=[],
                elapsed_s=0.0,
            )
            run.progress.record(start.metrics)
            sink.on_step(start)
        if config.training.max_off_policy_steps > 0:  # the background generator (a process with hf)
            run.producer = start_producer(run, produced_to_device(run.resumed_buffer or [], run.device), log)
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
            with autocast(
                run.device, config.model.autocast_bf16
            ):  # generation, scoring passes and the update
                report = _guarded_step(run, step, metrics)
            if run.memory_plan is not None:
                report.metrics.update(run.memory_plan.metrics())
            if periodic_eval.due(
                step, max_steps
            ):  # every rank evaluates (same weights), so none waits in a collective
                report.metrics.update(periodic_eval.metrics(run.model, run.tokenizer))
            if dist is not None:  # rank 0: metrics combined, every rank's rollout records
                report = dist.gather_report(report)
            run.progress.record(report.metrics)  # perf/elapsed_s, perf/tokens_total: the run's totals
            watched = _watch_rewards(run, report)  # adds watch/hacking to the step's metrics
            metrics = report.metrics
            sink.on_step(report)
            if watched is not None:
                _warn(sink, report.step, WARNING_KIND, watched.message)
            if save_every and step % save_every == 0 and step < max_steps:
                _save(run, step, sink)
        if step > run.start_step or status == "cancelled":
            _save(run, step, sink)
    except Exception as err:
        message = str(err) if isinstance(err, RLVRError) else f"{type(err).__name__}: {err}"
        sink.on_error(message, traceback.format_exc())
        raise
    sink.on_end(status, metrics)
    return TrainResult(
        status=status, steps_done=step, final_metrics=metrics, output_dir=config.checkpoint.output_dir
    )
