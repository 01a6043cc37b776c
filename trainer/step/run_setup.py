"""Everything a run holds between steps, and how it is built fresh or from a checkpoint."""

from __future__ import annotations

import os
import random
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np
import torch
from transformers import AutoTokenizer, PreTrainedModel, PreTrainedTokenizerBase

from trainer.config import ExperimentConfig
from trainer.data import check_template, load_samples
from trainer.data.sampler import PromptSource
from trainer.distributed.context import DistContext, current
from trainer.distributed.fsdp import is_sharded, load_full_optimizer_state_dict, shard_model
from trainer.environments.runner import EpisodeRunner
from trainer.errors import CheckpointError, ConfigError
from trainer.methods.axes import ActiveMethod
from trainer.methods.prompt_samplers import build_prompt_sampler
from trainer.models.checkpoint import (
    TrainerState,
    capture_rng,
    load_state,
    resolve_checkpoint_dir,
    restore_rng,
)
from trainer.models.device import resolve_device, resolve_dtype
from trainer.models.logprobs import score_full_rows
from trainer.models.lora import apply_lora, is_lora_model, load_causal_lm, reference_forward
from trainer.models.memory import MemoryPlan, plan_memory
from trainer.models.packed_forward import keep_padding
from trainer.models.tiny_model import BuildCallback, BuildProgress, resolve_model_path
from trainer.models.transformers_compat import enable_activation_checkpointing
from trainer.process.base import ScorerState
from trainer.rewards.hacking import HackingDetector, detector_for
from trainer.rollout import HFRolloutEngine, RolloutBatch, RolloutEngine, SamplingParams
from trainer.rubrics.scoring import RubricScorer, build_rubric_scorer
from trainer.samples import Sample
from trainer.sinks import PhaseCallback, PhaseReport, throttle_phases
from trainer.step.optimize import batch_logprobs
from trainer.step.progress import RunProgress
from trainer.step.teacher import Teacher, load_teacher
from trainer.verifiers.base import Verifier
from trainer.verifiers.scoring import build_verifiers

if TYPE_CHECKING:
    from trainer.step.collect import StepRollouts


class RolloutProducer(Protocol):
    """The background generator of an asynchronous run (trainer/step/async_rollouts.py)."""

    def publish(self, version: int, model: torch.nn.Module) -> None: ...

    def take(self, step: int) -> StepRollouts: ...

    def checkpoint_state(self, step: int) -> tuple[list[Any], dict[str, Any], torch.Tensor]: ...

    def stop(self) -> None: ...


@dataclass
class Run:
    """Everything a run holds between steps; a ``CollectionParts`` (trainer/step/collect.py) for the synchronous
    collect stage. In an asynchronous run (``producer`` set) the background generator holds ``sampler``,
    ``generator``, ``verifiers`` and ``rubric`` from its start (trainer/step/async_rollouts.py ``GeneratorParts``):
    the training thread then takes their state from ``producer.checkpoint_state`` (see ``state``)."""

    config: ExperimentConfig
    model: PreTrainedModel
    tokenizer: PreTrainedTokenizerBase
    ref_model: PreTrainedModel | None
    optimizer: torch.optim.Optimizer
    scheduler: torch.optim.lr_scheduler.LambdaLR
    sampler: PromptSource  # budget.prompt_sampler (trainer/methods/prompt_samplers.py)
    verifiers: list[tuple[str, Verifier]]
    engine: RolloutEngine
    generator: torch.Generator
    sampling: SamplingParams
    device: torch.device
    base_model_path: str
    start_step: int
    rubric: RubricScorer | None  # the rubric reward with its judge model loaded (trainer/rubrics/)
    teacher: Teacher | None = None  # OPD / OPSD teacher (trainer/step/teacher.py); None without one
    dist: DistContext | None = (
        None  # this rank of a data-parallel run (trainer/distributed/context.py); None: one process
    )
    memory_plan: MemoryPlan | None = (
        None  # training.memory_budget_gb's sizing (trainer/models/memory.py); None: no budget
    )
    methods: list[ActiveMethod] = field(
        default_factory=list
    )  # every method the config chose, in config order
    producer: RolloutProducer | None = None  # training.max_off_policy_steps > 0: the background generator
    resumed_buffer: list[Any] | None = (
        None  # an asynchronous checkpoint's buffered rollouts (trainer/step/async_rollouts.py)
    )
    progress: RunProgress = field(
        default_factory=RunProgress
    )  # elapsed time and tokens so far (trainer/step/progress.py)
    watch: HackingDetector | None = None  # reward_watch (trainer/rewards/hacking.py); None: no watch
    scorer_state: ScorerState | None = None  # a stateful step scorer's (the implicit PRM); None: none
    episodes: EpisodeRunner | None = None  # config.environment: runs and scores multi-turn episodes

    def __post_init__(self) -> None:
        if not self.methods:
            self.methods = self.config.methods()

    @property
    def micro_batch_size(self) -> int:
        """Rows per forward/backward: the memory plan's choice, else training.micro_batch_size."""
        return (
            self.memory_plan.micro_batch_size if self.memory_plan else self.config.training.micro_batch_size
        )

    def reference_logprobs(self, batch: RolloutBatch) -> torch.Tensor | None:
        """Per-token logprobs under the KL reference, or None when beta is 0. With LoRA the reference is
        the policy with its adapter disabled; otherwise the frozen copy in ``ref_model``."""
        if self.config.algorithm.beta <= 0:
            return None
        mb, temp = self.micro_batch_size, self.config.rollout.temperature
        if self.ref_model is not None:
            return batch_logprobs(self.ref_model, batch, mb, temp)
        with reference_forward(self.model):
            return batch_logprobs(self.model, batch, mb, temp)

    def after_update(self, version: int) -> None:
        """Hand the weights after optimizer step ``version`` to what samples with its own copy: the background
        generator of an asynchronous run (which loads the version it needs when it needs it), else a vLLM engine."""
        if self.producer is not None:
            self.producer.publish(version, self.model)
            return
        push = getattr(self.engine, "push_weights", None)
        if push is not None:
            push(self.model, version)

    def close(self) -> None:
        """Stop the background generator and the engine's own process or server, if any (idempotent)."""
        if self.producer is not None:
            self.producer.stop()
        close = getattr(self.engine, "close", None)
        if close is not None:
            close()

    def state(self, step: int) -> TrainerState:
        """What a checkpoint after ``step`` saves. With a background generator the prompt sampler is its own (it
        may be drawing right now): its state is left empty here, and the loop saves the generator's snapshot
        (``producer.checkpoint_state``), as it does for the sampling generator's."""
        return TrainerState(
            step=step,
            optimizer=self.optimizer.state_dict(),
            scheduler=self.scheduler.state_dict(),
            sampler=self.sampler.state_dict() if self.producer is None else {},
            rng=capture_rng(self.generator),
            config=self.config.model_dump(mode="json"),
            base_model_path=self.base_model_path,
            progress=self.progress.state(),
            reward_watch=None if self.watch is None else self.watch.state(),
            scorer_state=None if self.scorer_state is None else self.scorer_state.checkpoint_state(),
        )


def load_model(path: str, config: ExperimentConfig, device: torch.device) -> PreTrainedModel:
    if not Path(path).exists():
        raise ConfigError(
            f"model directory {path!r} does not exist: give a local Hugging Face checkpoint directory "
            "(nothing is downloaded) or 'tiny:addition' for the built-in tiny model"
        )
    try:
        model = load_causal_lm(
            path,
            resolve_dtype(config.model.dtype),
            trainable_adapter=True,
            attn_implementation=config.model.attn_implementation,
        )
    except (OSError, ValueError) as err:
        raise ConfigError(f"could not load a causal LM from {path!r}: {err}") from None
    model.to(device)  # type: ignore[arg-type]  # transformers stubs type .to oddly; modules move in place
    return model


def prepare_policy(model: PreTrainedModel, config: ExperimentConfig, resumed: bool) -> PreTrainedModel:
    """Add LoRA adapters to a fresh run's policy (a resumed LoRA checkpoint already has them) and turn on
    gradient checkpointing when asked."""
    m = config.model
    if m.lora_r > 0 and not is_lora_model(model):
        if resumed:
            raise CheckpointError(
                "the config asks for LoRA but the checkpoint holds a full model: resume with lora_r: 0"
            )
        model = apply_lora(
            model,
            r=m.lora_r,
            alpha=m.lora_alpha,
            dropout=m.lora_dropout,
            target_modules=m.lora_target_modules,
        )
    elif m.lora_r == 0 and is_lora_model(model):
        raise CheckpointError(
            "the checkpoint holds a LoRA adapter but model.lora_r is 0: resume with the LoRA settings"
        )
    if m.gradient_checkpointing:
        enable_activation_checkpointing(model)
        model.config.use_cache = False
    return model


def build_engine(
    model: PreTrainedModel, tokenizer: PreTrainedTokenizerBase, config: ExperimentConfig, model_path: str
) -> RolloutEngine:
    """The rollout engine named by ``rollout.engine``; for vLLM, in the mode ``rollout.vllm_mode`` names."""
    r = config.rollout
    if r.engine == "vllm":
        return build_vllm_engine(tokenizer, config, model_path, next(model.parameters()).device)
    return HFRolloutEngine(model, tokenizer)


def build_vllm_engine(
    tokenizer: PreTrainedTokenizerBase, config: ExperimentConfig, model_path: str, device: torch.device
) -> RolloutEngine:
    """vLLM colocated in this process, a rollout server this run starts and owns, or one already running."""
    from trainer.rollout.vllm_backends import LocalVLLM, RemoteVLLM, vllm_engine_args
    from trainer.rollout.vllm_engine import VLLMBackend, VLLMRolloutEngine

    r, run_dir = config.rollout, Path(config.checkpoint.output_dir)
    dist = current()
    if (
        dist is not None
    ):  # data-parallel: each process has its own server (and weight files), as it would its own GPU
        run_dir = run_dir / "distributed" / f"rank{dist.rank}"
    engine_args = vllm_engine_args(
        model_path,
        dtype=config.model.dtype,
        seed=config.seed,
        gpu_memory_utilization=r.vllm_gpu_memory_utilization,
        max_model_len=r.vllm_max_model_len,
        kv_cache_gb=r.vllm_kv_cache_gb,
    )
    weights_root = run_dir / "rollout-weights"
    backend: VLLMBackend
    if r.vllm_mode == "colocated":
        backend = LocalVLLM(engine_args)
    elif r.vllm_server_url:
        remote = RemoteVLLM(
            r.vllm_server_url, os.environ.get("RLVR_ROLLOUT_TOKEN"), config.training.generator_timeout_s
        )
        remote.wait_until_healthy(30.0)
        backend = remote
    else:
        from trainer.rollout.server_process import OwnedRolloutServer

        backend = OwnedRolloutServer(engine_args, weights_root, run_dir, config.training.generator_timeout_s)
    engine = VLLMRolloutEngine(tokenizer, backend, weights_root)
    engine.device = device
    return engine


def _seed_everything(seed: int) -> torch.Generator:
    random.seed(seed)
    np.random.seed(seed % 2**32)
    torch.manual_seed(seed)
    return torch.Generator().manual_seed(seed)


BUILDING_MODEL = "building_model"  # PhaseReport.name while a built-in 'tiny:' model is warm-started


def model_build_reporter(on_phase: PhaseCallback | None) -> BuildCallback | None:
    """Turn the per-SFT-step ``BuildProgress`` of a built-in model's first build into throttled
    ``building_model`` phase reports (None without a listener, so nothing is computed)."""
    if on_phase is None:
        return None
    forward = throttle_phases(on_phase)

    def report(progress: BuildProgress) -> None:
        forward(
            PhaseReport(
                name=BUILDING_MODEL,
                label=f"Building the built-in model {progress.model} (warm-start SFT, once)",
                subject=progress.model,
                done=progress.done,
                total=progress.total,
                elapsed_s=progress.elapsed_s,
                eta_s=progress.eta_s,
            )
        )

    return report


def build_run(
    config: ExperimentConfig,
    resume_from: str | Path | None = None,
    log: Callable[[str], None] = print,
    on_phase: PhaseCallback | None = None,
) -> Run:
    """Load model, tokenizer, data, verifiers and optimizer; restore a checkpoint when resuming.

    A built-in model (policy or teacher) that is not cached yet is built here first, reporting its
    progress to ``on_phase`` (throttled); a cached one reports nothing."""
    on_build = model_build_reporter(on_phase)
    device = resolve_device(config.model.device)
    generator = _seed_everything(config.seed)
    if device.type != "cpu":
        generator = torch.Generator(device=device).manual_seed(config.seed)

    state: TrainerState | None = None
    checkpoint_dir: Path | None = None
    if resume_from is not None:
        checkpoint_dir = resolve_checkpoint_dir(resume_from)
        state = load_state(checkpoint_dir)
        _check_resumable(config, state.config)
    base_model_path = (
        state.base_model_path
        if state
        else resolve_model_path(config.model.name_or_path, on_progress=on_build)
    )

    fsdp = config.training.fsdp  # load whole on the CPU; sharding moves each rank's shard to the device
    load_device = torch.device("cpu") if fsdp else device
    model = load_model(str(checkpoint_dir or base_model_path), config, load_device)
    model = prepare_policy(model, config, resumed=checkpoint_dir is not None)
    if fsdp:
        model = shard_model(model, device.type)  # before the optimizer, so its state is sharded too
    model.train()
    tokenizer = AutoTokenizer.from_pretrained(str(checkpoint_dir or base_model_path))
    ref_model = None
    if config.algorithm.beta > 0 and not is_lora_model(model):  # LoRA: the reference is the adapter-free base
        ref_model = load_model(base_model_path, config, load_device).eval().requires_grad_(False)
        if fsdp:  # as large as the policy, so sharded too; forward only, gathered once per logprob pass
            ref_model = shard_model(ref_model, device.type, forward_only=True)

    samples = load_samples(config.data)
    check_template(config.data, samples, tokenizer)  # a chat template problem fails now, not at step 1
    sampler = build_prompt_sampler(samples, config)
    optimizer = torch.optim.AdamW(
        [p for p in model.parameters() if p.requires_grad],
        lr=config.training.learning_rate,
        betas=(config.training.adam_beta1, config.training.adam_beta2),
        weight_decay=config.training.weight_decay,
        # one fused kernel for all parameters (CPU and CUDA, DTensor shards too): 0.54 ms instead of 2.4 ms a
        # step for the tiny model on 2 CPU cores
        fused=True,
    )
    warmup = config.training.warmup_steps
    scheduler = torch.optim.lr_scheduler.LambdaLR(
        optimizer, lambda s: min(1.0, (s + 1) / (warmup + 1)) if warmup else 1.0
    )
    r = config.rollout
    run = Run(
        config=config,
        model=model,
        tokenizer=tokenizer,
        ref_model=ref_model,
        optimizer=optimizer,
        scheduler=scheduler,
        sampler=sampler,
        verifiers=build_verifiers(config.verifiers),
        engine=build_engine(model, tokenizer, config, base_model_path),
        generator=generator,
        sampling=SamplingParams(
            r.max_completion_length, r.temperature, r.top_p, r.top_k, r.generation_batch_size
        ),
        device=device,
        base_model_path=base_model_path,
        start_step=0,
        rubric=build_rubric_scorer(config.rubric, config.model.dtype, device, config.seed),
        teacher=load_teacher(config, model, tokenizer, device, on_build=on_build),
        dist=current(),
        watch=detector_for(config),
    )
    for scorer in (run.model, run.ref_model, run.teacher.model if run.teacher else None):
        if scorer is not None and not config.training.shared_prompt_forward:
            score_full_rows(scorer)
        if scorer is not None and not config.training.packed_forward:
            keep_padding(scorer)
    run.scorer_state = build_scorer_state(run, checkpoint_dir, state)
    if config.environment is not None:
        run.episodes = EpisodeRunner(
            config.environment,
            run.engine,
            tokenizer,
            run.verifiers,
            config.reward_weights,  # type: ignore[arg-type]
        )
    if state is not None:
        if fsdp:  # checkpoints hold the full state (trainer/distributed/fsdp.py); each rank keeps its shard
            load_full_optimizer_state_dict(model, optimizer, state.optimizer)
        else:
            optimizer.load_state_dict(state.optimizer)
        scheduler.load_state_dict(state.scheduler)
        sampler.load_state_dict(state.sampler)
        restore_rng(state.rng, generator)
        run.start_step = state.step
        run.resumed_buffer = state.rollout_buffer
        run.progress = RunProgress.resumed(state.progress)
        if run.watch is not None:
            run.watch.load_state(state.reward_watch)
        push = getattr(run.engine, "push_weights", None)
        if push is not None and config.training.max_off_policy_steps == 0:  # vLLM loaded the base weights
            push(model, state.step)
        log(f"resumed from {checkpoint_dir} at step {state.step}")
    if config.training.memory_budget_gb is not None:
        apply_memory_plan(run, samples, log)
    return run


def build_scorer_state(
    run: Run, checkpoint_dir: Path | None, state: TrainerState | None
) -> ScorerState | None:
    """The implicit PRM (trainer/process/implicit_prm.py) when process_reward's scorer is 'implicit', restored from
    the checkpoint when resuming; None for every other scorer. The run's KL reference serves as the PRM's
    reference when it holds the policy's start weights whole (not sharded)."""
    cfg = run.config.process_reward
    if cfg is None or cfg.scorer.name != "implicit":
        return None
    from trainer.process.implicit_prm import build_implicit_prm

    ref = run.ref_model if run.ref_model is not None and not is_sharded(run.ref_model) else None
    return build_implicit_prm(
        cfg.scorer.params,
        run.base_model_path,
        resolve_dtype(run.config.model.dtype),
        run.device,
        run.tokenizer,
        ref_model=ref,
        dist=run.dist,
        resume_dir=checkpoint_dir,
        saved=None if state is None else state.scorer_state,
    )


def apply_memory_plan(run: Run, samples: list[Sample], log: Callable[[str], None]) -> None:
    """Size the run's micro-batches and generation batches for ``training.memory_budget_gb``."""
    judge = getattr(getattr(getattr(run.rubric, "judge", None), "engine", None), "model", None)
    teacher = run.teacher.model if run.teacher is not None else None
    plan = plan_memory(
        run.config, run.model, run.tokenizer, samples, run.device, [run.ref_model, teacher, judge]
    )
    if (
        run.dist is not None
    ):  # one size on every rank: a sharded (FSDP) update runs collectives per micro-batch
        sizes = run.dist.all_gather((plan.micro_batch_size, plan.generation_batch_size))
        plan = replace(
            plan, micro_batch_size=min(m for m, _ in sizes), generation_batch_size=min(g for _, g in sizes)
        )
    run.memory_plan = plan
    run.sampling = replace(run.sampling, batch_size=plan.generation_batch_size)
    log(plan.describe())


# Fields that may differ between the interrupted run and the resumed one.
_RESUME_MAY_CHANGE = {
    ("training", "max_steps"),
    ("checkpoint", "save_steps"),
    ("checkpoint", "save_total_limit"),
    ("name",),
    # Periodic evaluation only reads the policy; changing it does not change what training computes.
    ("evaluation", "eval_every"),
    ("evaluation", "benchmarks"),
    ("evaluation", "n_samples"),
    ("evaluation", "max_problems"),
    ("evaluation", "eval_at_start"),
    ("evaluation", "eval_at_end"),
    # How many processes share a step does not change what it computes (seed_per_prompt sampling).
    ("training", "num_processes"),
    ("training", "num_nodes"),  # nor over how many hosts (trainer/distributed/rendezvous.py)
    ("training", "node_join_timeout_s"),
    ("training", "collective_timeout_s"),
    # Sharding changes where state lives, not the update; checkpoints hold full state either way (trainer/distributed/fsdp.py).
    ("training", "fsdp"),
    # The reward-hacking watch only reads the metrics (trainer/rewards/hacking.py).
    *(
        ("reward_watch", name)
        for name in ("enabled", "learned", "verifier", "window", "min_rise", "min_fall")
    ),
}


def _check_resumable(config: ExperimentConfig, saved: dict[str, Any]) -> None:
    """Refuse to resume with a config that would change what the remaining steps compute."""
    now = config.model_dump(mode="json")
    diffs = []
    for section, value in saved.items():
        if isinstance(value, dict):
            for key, old in value.items():
                if (section, key) not in _RESUME_MAY_CHANGE and now.get(section, {}).get(key) != old:
                    diffs.append(
                        f"{section}.{key}: checkpoint {old!r}, now {now.get(section, {}).get(key)!r}"
                    )
        elif (section,) not in _RESUME_MAY_CHANGE and now.get(section) != value:
            diffs.append(f"{section}: checkpoint {value!r}, now {now.get(section)!r}")
    if diffs:
        raise CheckpointError(
            "cannot resume: the config differs from the checkpoint's in fields that change training:\n  "
            + "\n  ".join(diffs)
            + "\nresume with the original config (only training.max_steps and checkpoint.* may change)"
        )
