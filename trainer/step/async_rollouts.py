"""Asynchronous RL: a background generator that samples the next steps' rollouts while this step trains.

With ``training.max_off_policy_steps`` k > 0 the run starts a background generator that, for each step s in
order, waits until the policy of version ``v(s) = max(0, s - 1 - k)`` has been published (version n is the
policy after optimizer step n), loads exactly that version into its own copy of the policy, and runs the
step's collection (trainer/step/collect.py: prompt sampler, allocator, generation, verifiers) into a buffer.
The training step takes its rollouts from the buffer instead of generating them. So step s trains on rollouts
exactly ``min(k, s - 1)`` versions old: the bound holds by construction, and which weights sampled which step
never depends on timing, so a seeded asynchronous run is reproducible and resumes exactly. This is the
"fixed async level" of prime-rl's ``max_off_policy_steps`` (TRL's and verl's asynchronous trainers bound
staleness the same way); the off-policy difference is corrected by truncated importance weights
(trainer/step/policy_scoring.py).

Where the generator runs: with the ``hf`` engine it is a *process* of its own (trainer/step/generator_process.py),
pinned to its own cores, so that generation and the update do not take turns on one interpreter lock (a thread
made the asynchronous run slower than the synchronous one on two cores); in a data-parallel run every rank has
its own, and the generators form a process group of their own for the collection's all-gathers, so they never
meet the update's collectives. With ``vllm`` the engine already generates in a process or server of its own, and
the generator is a thread of the training process (``ThreadProducer``) that drives it.

Ownership is in the types: the generator collects through ``GeneratorParts`` (trainer/step/collect.py
``CollectionParts``), which it holds while the run lasts: the prompt sampler, the sampling generator, the
verifiers and the rubric judge, its own tokenizer, engine and, with the ``hf`` engine, policy copy (the thread
is handed the run's; the process builds its own from the run's state). The training thread keeps the policy,
the optimizer, the reference and the teacher, and reaches the generator only through the producer's
training-thread side (``BufferedProducer``): ``publish`` (weights), ``take`` (a step's rollouts) and
``checkpoint_state`` (the sampler's and sampling generator's state, as snapshots the generator made).

Checkpoints (``checkpoint_state``): at the end of step s the buffer holds, or is about to hold, the rollouts
of steps s+1..s+k, sampled with versions up to s-1, which a resumed run cannot reproduce (only version s is
saved). The checkpoint waits for them and saves them with the prompt sampler's and the sampling generator's
state *after the last of them*: a resumed run trains on exactly those rollouts, then generates step s+k+1
with version s, as the uninterrupted run does. Nothing in flight or buffered is lost or used twice. A
data-parallel checkpoint holds every rank's buffered share (``Produced.rank``); it resumes with the same
number of processes.

A generator that fails hands its exception (a process: its message and the last lines of its traceback) to
the training thread; one that stops producing is noticed after ``training.generator_timeout_s`` and the run
fails with a message saying so.
"""

from __future__ import annotations

import copy
import dataclasses
import os
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, cast

import torch
from torch import Tensor

from trainer.distributed.context import set_step_replicated, step_replicated
from trainer.environments.runner import EpisodeRunner
from trainer.errors import CheckpointError, RLVRError
from trainer.models.checkpoint import capture_rng
from trainer.rollout import HFRolloutEngine, RolloutBatch, SamplingParams
from trainer.step.collect import StepRollouts, batch_to_device, collect_rollouts

if TYPE_CHECKING:
    from transformers import PreTrainedModel, PreTrainedTokenizerBase

    from trainer.config import ExperimentConfig
    from trainer.data.sampler import PromptSource
    from trainer.distributed.context import DistContext
    from trainer.rollout import RolloutEngine
    from trainer.rubrics.scoring import RubricScorer
    from trainer.step.run_setup import Run
    from trainer.verifiers.base import Verifier

# Tests only: "step:raise", "step:hang" or "step:exit" makes the generator fail, hang or die (exit status 3)
# just before collecting that step, as a broken verifier, a stuck judge or a killed process would.
GENERATOR_FAULT_ENV = "RLVR_TEST_GENERATOR_FAULT"


@dataclass(frozen=True)
class GeneratorParts:
    """What the background generator collects with (a ``CollectionParts``), held by it alone.

    ``sampler``, ``generator``, ``verifiers``, ``rubric``: the run's, handed over when the generator starts (the
    training thread does not use them again), or built from the run's state in a generator process. Its own:
    ``tokenizer`` (fast tokenizers are not shared between threads), ``engine`` (the ``hf`` engine over
    ``model``, its own policy copy; ``vllm``: the run's engine, whose weight files the training thread only
    writes through ``publish``), ``episodes`` (with an ``environment``: the multi-turn episodes, run on that
    engine). Read-only: ``config``, ``sampling``, ``device``, ``dist`` (a generator process's: the generators'
    own process group).
    """

    config: ExperimentConfig
    model: PreTrainedModel
    tokenizer: PreTrainedTokenizerBase
    engine: RolloutEngine
    sampler: PromptSource
    generator: torch.Generator
    sampling: SamplingParams
    verifiers: list[tuple[str, Verifier]]
    rubric: RubricScorer | None
    device: torch.device
    dist: DistContext | None
    episodes: EpisodeRunner | None = None  # config.environment: episodes on the generator's own engine


class GeneratorStalled(RLVRError):
    """The background generator produced nothing within training.generator_timeout_s."""


class GeneratorFailed(RLVRError):
    """The background generator process failed or died; the message holds its error and traceback's end."""


@dataclass
class Produced:
    """One step's rollouts as the generator made them, and the generator's state right after."""

    step: int
    version: int  # the policy version that sampled them
    rollouts: StepRollouts
    sampler_state: dict[str, Any]  # the prompt sampler's state after this step's draws
    sampling_rng: Tensor  # the sampling generator's state after this step
    generate_s: float  # seconds spent collecting (generation and verifiers)
    wait_s: float  # seconds the generator waited for this step's weights (generator idle time)
    rank: int = 0  # the data-parallel rank whose share these rollouts are
    processes: int = 1  # how many processes the run had (a checkpoint resumes with as many)
    replicated: bool = False  # every rank trains on the whole step (trainer/distributed/context.py)


def version_for(step: int, max_off_policy_steps: int) -> int:
    """The policy version that samples step ``step``'s rollouts (1-based steps; version 0 is the start)."""
    return max(0, step - 1 - max_off_policy_steps)


def generator_fault_point(step: int) -> None:
    """Tests only (tests/trainer/test_async_rollouts.py): the fault ``RLVR_TEST_GENERATOR_FAULT`` asks for."""
    spec = os.environ.get(GENERATOR_FAULT_ENV)
    if not spec:
        return
    at, mode = spec.split(":")
    if step != int(at):
        return
    if mode == "hang":
        time.sleep(10**6)
    if mode == "exit":
        os._exit(3)
    raise RuntimeError(f"the verifier service went away (test fault at step {step})")


def produce_step(parts: GeneratorParts, step: int, version: int, wait_s: float) -> Produced:
    """Collect step ``step`` with the loaded policy of version ``version``; the snapshot a checkpoint needs."""
    generator_fault_point(step)
    t0 = time.perf_counter()
    rollouts = collect_rollouts(parts, step)
    dist = parts.dist
    return Produced(
        step,
        version,
        rollouts,
        copy.deepcopy(parts.sampler.state_dict()),
        capture_rng(parts.generator)["sampling"],
        time.perf_counter() - t0,
        wait_s,
        rank=0 if dist is None else dist.rank,
        processes=1 if dist is None else dist.world_size,
        replicated=step_replicated(),
    )


class _StaleSampler:
    """An engine over the generator's own policy copy: its logprobs are an older policy's, so they are the
    batch's sampler logprobs (the training step rescores with the current policy)."""

    def __init__(self, inner: HFRolloutEngine) -> None:
        self.inner = inner

    @property
    def device(self) -> torch.device:
        return self.inner.device

    def generate(
        self, prompts: list[str], params: SamplingParams, generator: torch.Generator
    ) -> RolloutBatch:
        return self._stale(self.inner.generate(prompts, params, generator))

    def generate_from_ids(
        self,
        contexts: list[list[int]],
        params: SamplingParams,
        generator: torch.Generator,
        stop: Sequence[str] = (),
    ) -> RolloutBatch:
        """Multi-turn episodes' turns (trainer/environments/driver.py), marked as an older policy's the same way."""
        return self._stale(self.inner.generate_from_ids(contexts, params, generator, stop))

    @staticmethod
    def _stale(batch: RolloutBatch) -> RolloutBatch:
        batch.sampler_logprobs = batch.logprobs.clone()
        return batch


def stale_engine(model: PreTrainedModel, tokenizer: PreTrainedTokenizerBase) -> RolloutEngine:
    """The ``hf`` engine over a generator's own policy copy, its logprobs marked as an older policy's."""
    return cast("RolloutEngine", _StaleSampler(HFRolloutEngine(model, tokenizer)))


def episode_runner(
    cfg: ExperimentConfig,
    engine: RolloutEngine,
    tokenizer: PreTrainedTokenizerBase,
    verifiers: list[tuple[str, Verifier]],
) -> EpisodeRunner | None:
    """With ``config.environment``: the generator's own engine and tokenizer run its episodes."""
    if cfg.environment is None:
        return None
    return EpisodeRunner(cfg.environment, engine, tokenizer, verifiers, cfg.reward_weights)


def buffered_share(buffered: list[Produced], dist: DistContext | None) -> list[Produced]:
    """This rank's part of an asynchronous checkpoint's buffered rollouts (every rank's are saved)."""
    rank, processes = (0, 1) if dist is None else (dist.rank, dist.world_size)
    saved = {p.processes for p in buffered}
    if saved and saved != {processes}:
        raise CheckpointError(
            f"this asynchronous checkpoint holds rollouts generated by {saved.pop()} process(es) for its next steps, "
            f"and this run has training.num_processes {processes}: resume it with the number of processes it was "
            "saved with"
        )
    return [p for p in buffered if p.rank == rank]


class BufferedProducer:
    """The training thread's side of a background generator: the buffer of produced steps, ``take``,
    ``checkpoint_state`` and the waiting, over a generator that ``_deliver``s steps or ``_fail``s."""

    def __init__(self, run: Run, buffered: list[Produced] | None = None) -> None:
        cfg = run.config
        self.k = cfg.training.max_off_policy_steps
        self.max_steps = cfg.training.max_steps
        self.timeout_s = float(cfg.training.generator_timeout_s)
        mine = buffered_share(buffered or [], run.dist)
        self._ready: dict[int, Produced] = {b.step: b for b in mine}
        self._snapshots: dict[int, Produced] = dict(self._ready)
        self._next = max(self._ready, default=run.start_step) + 1  # the next step to generate
        self._cond = threading.Condition()
        self._error: BaseException | None = None

    def _alive(self) -> bool:
        raise NotImplementedError

    def _deliver(self, produced: Produced) -> None:
        with self._cond:
            self._ready[produced.step] = produced
            self._snapshots[produced.step] = produced
            self._next = produced.step + 1
            self._cond.notify_all()

    def _fail(self, err: BaseException) -> None:
        with self._cond:
            if self._error is None:
                self._error = err
            self._cond.notify_all()

    def take(self, step: int) -> StepRollouts:
        """Step ``step``'s rollouts (waits for the generator); their async/* metrics added."""
        t0 = time.perf_counter()
        produced = self._wait_for(step, f"the rollouts of step {step}")
        with self._cond:
            del self._ready[step]
            buffered = len(self._ready)
        idle = time.perf_counter() - t0
        staleness = (step - 1) - produced.version
        if not 0 <= staleness <= self.k:  # by construction; a broken invariant must not train silently
            raise RuntimeError(
                f"step {step} got rollouts of policy version {produced.version} (bound {self.k})"
            )
        set_step_replicated(produced.replicated)  # as the collect stage of a synchronous step would
        r = produced.rollouts
        metrics = {
            **r.metrics,
            "async/staleness": float(staleness),
            "async/policy_version": float(produced.version),
            "async/trainer_idle_s": idle,
            "async/generator_idle_s": produced.wait_s,
            "async/generator_busy_s": produced.generate_s,
            "async/buffered_steps": float(buffered),
        }
        allocation = [{**a, "policy_version": produced.version} for a in r.allocation]
        return dataclasses.replace(r, metrics=metrics, allocation=allocation)

    def checkpoint_state(self, step: int) -> tuple[list[Produced], dict[str, Any], Tensor]:
        """What a checkpoint after step ``step`` saves: the rollouts of steps ``step``+1..``step``+k (waiting for
        them), and the prompt sampler's and sampling generator's state after the last of them."""
        last = min(step + self.k, self.max_steps)
        for s in range(step + 1, last + 1):
            self._wait_for(s, f"the buffered rollouts of step {s} (for the checkpoint after step {step})")
        with self._cond:
            buffered = [self._ready[s] for s in range(step + 1, last + 1)]
            snapshot = self._snapshots[last]
            for old in [s for s in self._snapshots if s < last]:
                del self._snapshots[old]
        return buffered, snapshot.sampler_state, snapshot.sampling_rng

    def _wait_for(self, step: int, what: str) -> Produced:
        deadline = time.monotonic() + self.timeout_s
        with self._cond:
            while step not in self._ready:
                if self._error is not None:
                    raise self._error
                if not self._alive():
                    raise RLVRError(f"the rollout generator stopped before producing {what}")
                left = deadline - time.monotonic()
                if left <= 0:
                    raise GeneratorStalled(
                        f"the rollout generator produced nothing for {self.timeout_s:.0f} s while training waited for "
                        f"{what} (it is at step {self._next}); if one step's generation really takes longer, raise "
                        "training.generator_timeout_s"
                    )
                self._cond.wait(min(left, 1.0))
            return self._ready[step]


class ThreadProducer(BufferedProducer):
    """The background generator as a thread of the training process: the ``vllm`` engine's (its rollout server
    or engine core does the generating in a process of its own; the thread only drives it and scores)."""

    def __init__(self, run: Run, buffered: list[Produced] | None = None) -> None:
        super().__init__(run, buffered)
        engine: Any = run.engine
        engine.weights.keep = self.k + 2  # keep every version a pending step may still need
        tokenizer = copy.deepcopy(run.tokenizer)  # the generator's own (not shared between threads)
        self._parts = GeneratorParts(
            config=run.config,
            model=run.model,
            tokenizer=tokenizer,
            engine=cast("RolloutEngine", engine),
            sampler=run.sampler,
            generator=run.generator,
            sampling=run.sampling,
            verifiers=run.verifiers,
            rubric=run.rubric,
            device=run.device,
            dist=run.dist,
            episodes=episode_runner(run.config, engine, tokenizer, run.verifiers),
        )
        self._loaded = -1  # the version the engine holds
        self._versions: dict[int, Any] = {}  # version -> its weight directory
        self._stop = False
        self.publish(run.start_step, run.model)
        self._thread = threading.Thread(target=self._loop, name="rlvr-rollout-generator", daemon=True)
        self._thread.start()

    def publish(self, version: int, model: torch.nn.Module) -> None:
        """Make the policy after optimizer step ``version`` available to the generator."""
        weights = self._parts.engine.weights.write(model, version)  # type: ignore[attr-defined]
        with self._cond:
            self._versions[version] = weights
            oldest_needed = version_for(self._next, self.k)
            for old in [v for v in self._versions if v < min(oldest_needed, version)]:
                del self._versions[old]
            self._cond.notify_all()

    def stop(self) -> None:
        with self._cond:
            self._stop = True
            self._cond.notify_all()
        self._thread.join(timeout=5.0)

    def _alive(self) -> bool:
        return self._thread.is_alive()

    def _loop(self) -> None:
        try:
            while True:
                with self._cond:
                    if self._stop or self._next > self.max_steps:
                        return
                    step = self._next
                version = version_for(step, self.k)
                t0 = time.perf_counter()
                weights = self._await_version(version)
                if weights is None:
                    return
                if version != self._loaded:
                    self._parts.engine.load_version(weights)  # type: ignore[attr-defined]
                    self._loaded = version
                self._deliver(produce_step(self._parts, step, version, time.perf_counter() - t0))
        except BaseException as err:  # handed to the training thread, which raises it
            self._fail(err)

    def _await_version(self, version: int) -> Any:
        with self._cond:
            while version not in self._versions:
                if self._stop:
                    return None
                self._cond.wait(1.0)
            return self._versions[version]


def checkpoint_async(run: Run, step: int) -> tuple[list[Produced], dict[str, Any], Tensor] | None:
    """What a checkpoint after ``step`` saves of an asynchronous run (None in a synchronous one), on the CPU:
    every rank's buffered rollouts (gathered to rank 0, which writes; other ranks get theirs back), the prompt
    sampler's and sampling generator's state after the last of them (the same on every rank). Every rank calls it."""
    if run.producer is None:
        return None
    buffered, sampler_state, sampling_rng = run.producer.checkpoint_state(step)
    buffered = produced_to_device(buffered, torch.device("cpu"))
    if run.dist is not None:
        parts = run.dist.gather(buffered)
        if parts is not None:
            buffered = [p for part in parts for p in part]
    return buffered, sampler_state, sampling_rng


def produced_to_device(items: list[Produced], device: torch.device) -> list[Produced]:
    """Buffered rollouts moved to ``device`` (read from a checkpoint, or sent by a generator process, on the CPU)."""
    out = []
    for p in items:
        r = p.rollouts
        moved = dataclasses.replace(
            r,
            batch=batch_to_device(r.batch, device),
            group_ids=r.group_ids.to(device),
            rewards=r.rewards.to(device),
        )
        out.append(dataclasses.replace(p, rollouts=moved))
    return out
