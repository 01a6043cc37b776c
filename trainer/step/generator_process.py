"""The ``hf`` engine's background generator as a process of its own, on cores of its own.

A generator *thread* takes turns with the update on the interpreter lock and shares the update's cores, so on a
small machine an asynchronous run was slower than the synchronous one (0.106 s a step against 0.0435 on two
cores, benchmarks/vs_trl.py). Here the generator is a child process (``python -m trainer.step.generator_process``:
nothing of the trainer's threads, process group or CUDA context is inherited, and unlike multiprocessing's spawn
the caller's main script is not run again in it) that runs the same collection (trainer/step/async_rollouts.py
``produce_step``) with its own policy copy, prompt sampler, sampling generator, verifiers and rubric, built from
the run's state at the start (so a resumed run's generator starts where the checkpoint's did). The cores are split
(``split_cores``): the generator gets one core on a two-core machine and half of them beyond, the trainer the rest,
each with as many torch threads (never more than it had); the split is undone when the run closes (a Celery worker
trains run after run in one process).

Why not the rollout server (trainer/rollout/rollout_server.py) with an hf backend: only the sampling would move,
while the prompt sampler, allocator, verifiers and rubric would still run on the trainer's interpreter, and every
batch would cross HTTP as JSON. The child runs the whole collection and the two sides exchange only weights and
finished steps.

What crosses between them: the spec (config, tokenizer, prompt sampler, sampling generator state) once, on the
child's stdin; weights, one shared-memory file per published version (trainer/rollout/shared_weights.py) whose
descriptor goes over a Unix socket, which the child keeps until it loads exactly the version a step needs;
finished steps (``Produced``, on the CPU, pickled by value) the other way over a pipe, read by a receiver thread
into the buffer; a failure as the child's message and the last lines of its traceback (``GeneratorFailed``); a
child that dies without one (killed, out of memory) fails the run with its exit status. The child gets SIGKILL
when the trainer dies (``PR_SET_PDEATHSIG``) and is asked to stop, then terminated, then killed when the run
closes: none outlives the run.

Data parallel: every rank starts its own generator, and the generators form a process group of their own (gloo,
at an address rank 0 picks and every rank learns through the trainers' group), so the collection's all-gathers
(trainer/step/collect.py) run between generators and never beside the update's collectives; each rank's generator
produces that rank's share of every step, exactly as the synchronous collect stage would.
"""

from __future__ import annotations

import contextlib
import os
import pickle
import signal
import socket
import subprocess
import sys
import threading
import time
import traceback
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import timedelta
from multiprocessing.connection import Connection
from pathlib import Path
from typing import TYPE_CHECKING, Any

import torch

from trainer.distributed.context import balanced_share
from trainer.errors import ConfigError
from trainer.rollout.shared_weights import WeightLayout
from trainer.step.async_rollouts import (
    BufferedProducer,
    GeneratorFailed,
    GeneratorParts,
    Produced,
    ThreadProducer,
    episode_runner,
    produced_to_device,
    stale_engine,
    version_for,
)

if TYPE_CHECKING:
    from transformers import PreTrainedTokenizerBase

    from trainer.config import ExperimentConfig
    from trainer.data.sampler import PromptSource
    from trainer.rollout import SamplingParams
    from trainer.step.run_setup import RolloutProducer, Run

TRACEBACK_LINES = 12  # of a failed generator's traceback, in the run's error
# weights and commands: one message per packet, each weight buffer's descriptor with its message
_PACKETS = getattr(socket, "SOCK_SEQPACKET", socket.SOCK_DGRAM)


def split_cores(
    available: Sequence[int], local_rank: int = 0, local_world: int = 1
) -> tuple[list[int], list[int]] | None:
    """(the trainer's cores, the generator's) from the cores this process may use, or None where there are too
    few to split (then neither is pinned). A data-parallel rank first takes its contiguous share of the host's
    cores. The generator gets one core of two, half of them beyond (rounded down); the trainer the rest.

    >>> split_cores([0, 1]), split_cores([0, 1, 2, 3]), split_cores([0, 1, 2, 3], 1, 2), split_cores([0])
    (([1], [0]), ([2, 3], [0, 1]), ([3], [2]), None)
    """
    cores = sorted(available)
    if local_world > 1:
        if len(cores) < 2 * local_world:
            return None
        cores = cores[balanced_share(len(cores), local_rank, local_world)]
    if len(cores) < 2:
        return None
    generator = max(1, len(cores) // 2)
    return cores[generator:], cores[:generator]


def _die_with_parent() -> None:
    """Linux: the child gets SIGKILL when the training process dies, so a killed trainer (an out-of-memory kill, a
    killed Celery worker) leaves no generator behind (as each rank of trainer/distributed/rank_main.py does)."""
    if not sys.platform.startswith("linux"):
        return
    import ctypes

    pr_set_pdeathsig = 1
    with contextlib.suppress(OSError):
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(pr_set_pdeathsig, signal.SIGKILL)


def _pin(cores: Sequence[int]) -> None:
    """Every thread of this process onto ``cores`` (threads started later inherit it); Linux only."""
    if not hasattr(os, "sched_setaffinity"):
        return
    for tid in os.listdir("/proc/self/task"):
        with contextlib.suppress(OSError):  # a thread that has just exited
            os.sched_setaffinity(int(tid), set(cores))


@dataclass(frozen=True)
class GeneratorSpec:
    """What the child builds its ``GeneratorParts`` from (pickled once, at the start)."""

    config_data: dict[str, Any]  # the run's config as JSON data (its choice types are built, not importable)
    base_model_path: str
    tokenizer: PreTrainedTokenizerBase
    sampler: PromptSource
    sampling_rng: torch.Tensor
    sampling: SamplingParams
    device: torch.device
    layout: WeightLayout
    first_step: int  # the first step it generates (after those a resumed checkpoint buffered)
    cores: list[int] | None  # None: not pinned
    threads: int
    rank: int = 0
    processes: int = 1
    group_address: str | None = None  # tcp://host:port of the generators' process group (data parallel)
    # (registry module, registry, name, module, qualified name) of what was registered outside trainer/ (plugins,
    # tests): registered again in the child, which imports only what trainer/ registers itself
    extensions: tuple[tuple[str, str, str, str, str], ...] = ()

    @property
    def config(self) -> ExperimentConfig:
        from trainer.config import config_from_dict

        return config_from_dict(self.config_data, source="the run's config")


class ProcessProducer(BufferedProducer):
    """The training process's side of a generator process (see the module docstring)."""

    def __init__(self, run: Run, buffered: list[Produced] | None = None, log: Any = print) -> None:
        super().__init__(run, buffered)
        self._stopping = False
        self._saved_affinity = os.sched_getaffinity(0) if hasattr(os, "sched_getaffinity") else None
        self._saved_threads = torch.get_num_threads()
        split = self._split(run)
        state = run.model.state_dict()
        self._layout = WeightLayout.of(state)
        spec = GeneratorSpec(
            config_data=run.config.model_dump(mode="json"),
            base_model_path=run.base_model_path,
            tokenizer=run.tokenizer,
            sampler=run.sampler,
            sampling_rng=run.generator.get_state(),
            sampling=run.sampling,
            device=_exact_device(run.device),
            layout=self._layout,
            first_step=self._next,
            cores=None if split is None else split[1],
            threads=max(1, min(self._saved_threads, len(split[1]))) if split else self._saved_threads,
            rank=0 if run.dist is None else run.dist.rank,
            processes=1 if run.dist is None else run.dist.world_size,
            group_address=_group_address(run),
            extensions=registered_extensions(),
        )
        self._start(spec)
        if split is not None:
            _pin(split[0])
            torch.set_num_threads(max(1, min(self._saved_threads, len(split[0]))))
        where = (
            f" on core(s) {split[1]}, training on {split[0]}"
            if split
            else ", sharing the cores with training"
        )
        log(f"asynchronous with the hf engine: the rollout generator is a process of its own{where}")
        self.publish(run.start_step, run.model, state)
        self._receiver = threading.Thread(target=self._receive, name="rlvr-generator-receiver", daemon=True)
        self._receiver.start()

    def _split(self, run: Run) -> tuple[list[int], list[int]] | None:
        if self._saved_affinity is None:
            return None
        cores = sorted(self._saved_affinity)
        if run.dist is None:
            return split_cores(cores)
        return split_cores(
            cores, int(os.environ.get("LOCAL_RANK", "0")), int(os.environ.get("LOCAL_WORLD_SIZE", "1"))
        )

    def _start(self, spec: GeneratorSpec) -> None:
        """Start ``python -m trainer.step.generator_process`` (not multiprocessing's spawn, which would re-run the
        caller's main script in the child) with the spec on its stdin, a socket for weights and commands and a
        pipe for finished steps."""
        self._commands, theirs = socket.socketpair(socket.AF_UNIX, _PACKETS)
        results_r, results_w = os.pipe()
        # the trainer's import path, in its order (as multiprocessing's spawn passes it): the same trainer/ and plugins
        path = [str(Path(__file__).resolve().parents[2]), *(p for p in sys.path if p)]
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(dict.fromkeys(path))}
        cmd = [sys.executable, "-m", "trainer.step.generator_process", str(theirs.fileno()), str(results_w)]
        self._proc = subprocess.Popen(
            cmd, stdin=subprocess.PIPE, env=env, pass_fds=(theirs.fileno(), results_w)
        )
        theirs.close()  # the child's ends: the trainer sees EOF when the child is gone
        os.close(results_w)
        self._results = Connection(results_r, writable=False)
        assert self._proc.stdin is not None
        with contextlib.suppress(OSError):  # a child that died at once: its exit status is reported at take
            self._proc.stdin.write(pickle.dumps(spec))
        with contextlib.suppress(OSError):
            self._proc.stdin.close()

    def publish(
        self, version: int, model: torch.nn.Module, state: dict[str, torch.Tensor] | None = None
    ) -> None:
        """Make the policy after optimizer step ``version`` available to the generator: one shared-memory copy."""
        fd = self._layout.pack(model.state_dict() if state is None else state)
        try:  # a child that is gone: its error (or exit status) reaches the training thread at take
            socket.send_fds(self._commands, [pickle.dumps(("weights", version))], [fd])
        except OSError:
            pass
        finally:
            os.close(fd)

    def stop(self) -> None:
        """Stop the child (asked, then terminated, then killed) and give the trainer its cores back."""
        self._stopping = True
        with contextlib.suppress(OSError):
            self._commands.send(pickle.dumps(("stop",)))
        for signal_it in (None, self._proc.terminate, self._proc.kill):
            if signal_it is not None:
                signal_it()
            with contextlib.suppress(subprocess.TimeoutExpired):
                self._proc.wait(timeout=5.0)
                break
        self._commands.close()
        self._receiver.join(timeout=2.0)
        if self._saved_affinity is not None:
            _pin(sorted(self._saved_affinity))
        torch.set_num_threads(self._saved_threads)

    def _alive(self) -> bool:
        return self._proc.poll() is None or self._receiver.is_alive()

    def _receive(self) -> None:
        """The receiver thread: finished steps into the buffer, the child's failure or death to ``_fail``."""
        try:
            while True:
                message = pickle.loads(self._results.recv_bytes())
                if message[0] == "produced":
                    self._deliver(message[1])
                elif message[0] == "error":
                    self._fail(_failure(*message[1:]))
                    return
                else:  # "done": every step produced
                    return
        except (EOFError, OSError):
            if not self._stopping:
                self._fail(self._died())
        finally:
            self._results.close()

    def _died(self) -> GeneratorFailed:
        try:
            code = self._proc.wait(timeout=5.0)
        except subprocess.TimeoutExpired:
            code = None
        how = (
            f"was killed by signal {-code}" if code is not None and code < 0 else f"exited with status {code}"
        )
        return GeneratorFailed(
            f"the rollout generator process {how} without an error of its own (out of memory, or killed from "
            f"outside) while training was at step {self._next - 1}; its output went to this run's log"
        )


def _failure(error: BaseException | None, kind: str, message: str, trace: str) -> BaseException:
    """The error the training thread raises for a failed generator: a user error (the config's, a reward
    source's) as it was raised, anything else as ``GeneratorFailed`` with the end of the child's traceback."""
    from trainer.errors import RLVRError

    if isinstance(error, RLVRError):
        return error
    tail = "\n".join(trace.rstrip().splitlines()[-TRACEBACK_LINES:])
    return GeneratorFailed(f"the rollout generator failed: {kind}: {message}\nits traceback ends:\n{tail}")


# The registries the collection reads (verifiers, rubric rules and aggregations, environments).
_REGISTRIES = (
    ("trainer.verifiers.base", "VERIFIERS"),
    ("trainer.rubrics.rules", "RULES"),
    ("trainer.rubrics.aggregators", "AGGREGATORS"),
    ("trainer.environments.base", "ENVIRONMENTS"),
)


def registered_extensions() -> tuple[tuple[str, str, str, str, str], ...]:
    """What this process registered from outside trainer/ in the registries collection reads, for the generator
    process to register too; something it could not import (defined in the main script or inside a function) is
    refused now, with how to fix it."""
    import importlib

    found = []
    for module_name, attr in _REGISTRIES:
        registry = getattr(importlib.import_module(module_name), attr)
        for name in registry:
            item = registry.get(name)
            module, qualname = getattr(item, "__module__", ""), getattr(item, "__qualname__", "")
            if module.startswith("trainer."):
                continue
            if module == "__main__" or "<locals>" in qualname or not module:
                raise ConfigError(
                    f"{registry.kind} {name!r} is defined in {module or 'an unknown module'} ({qualname}), which the "
                    "asynchronous run's generator process cannot import: define it at the top level of an importable "
                    "module, or set training.max_off_policy_steps to 0"
                )
            found.append((module_name, attr, name, module, qualname))
    return tuple(found)


def _register_extensions(extensions: Sequence[tuple[str, str, str, str, str]]) -> None:
    """The child's side of ``registered_extensions``."""
    import importlib

    for module_name, attr, name, module, qualname in extensions:
        registry = getattr(importlib.import_module(module_name), attr)
        if name in registry:
            continue
        item: Any = importlib.import_module(module)
        if name in registry:  # importing its module registered it (a decorator at the top level)
            continue
        for part in qualname.split("."):
            item = getattr(item, part)
        registry.register(name)(item)


def _exact_device(device: torch.device) -> torch.device:
    """``device`` with its index (a bare 'cuda' means the trainer's current one, which the child must use too)."""
    if device.type != "cpu" and device.index is None:
        return torch.device(device.type, torch.accelerator.current_device_index())
    return device


def _group_address(run: Run) -> str | None:
    """Data parallel: the address of the generators' own process group, picked by rank 0 (a free port on its host,
    ``MASTER_ADDR``) and learnt by every rank through the trainers' group. None in one process."""
    if run.dist is None:
        return None
    address = None
    if run.dist.is_main:
        with socket.socket() as s:
            s.bind(("", 0))
            port = s.getsockname()[1]
        address = f"tcp://{os.environ.get('MASTER_ADDR', '127.0.0.1')}:{port}"
    chosen: str = run.dist.all_gather(address)[0]
    return chosen


def start_producer(run: Run, buffered: list[Produced] | None, log: Any = print) -> RolloutProducer:
    """The background generator of an asynchronous run: a process for the hf engine, a thread for vllm."""
    if hasattr(run.engine, "load_version"):
        return ThreadProducer(run, buffered)
    return ProcessProducer(run, buffered, log)


# -- the child ----------------------------------------------------------------------------------------------


def generator_main(commands_fd: int, results_fd: int) -> None:
    """The generator process: read the spec, build its parts, then generate every step from ``spec.first_step`` on,
    each with exactly the policy version it must have, sending each finished step to the trainer."""
    _die_with_parent()
    results = Connection(results_fd, readable=False)
    try:
        spec: GeneratorSpec = pickle.load(sys.stdin.buffer)
        if spec.cores is not None:
            _pin(spec.cores)
        torch.set_num_threads(spec.threads)
        with socket.socket(fileno=commands_fd) as commands:
            _generate(spec, commands, results)
    except BaseException as err:
        try:
            pickle.dumps(err)
            sendable: BaseException | None = err
        except Exception:
            sendable = None
        with contextlib.suppress(OSError):
            results.send_bytes(
                pickle.dumps(("error", sendable, type(err).__name__, str(err), traceback.format_exc()))
            )
    finally:
        import torch.distributed as dist

        if dist.is_available() and dist.is_initialized():
            dist.destroy_process_group()


def _generate(spec: GeneratorSpec, commands: socket.socket, results: Connection) -> None:
    from trainer.step.async_rollouts import produce_step

    _register_extensions(spec.extensions)
    cfg = spec.config
    if spec.group_address is not None:
        _join_generator_group(spec, cfg.training.generator_timeout_s)
    parts = build_parts(spec, cfg)
    weights = _Inbox(commands, spec.layout)
    loaded = -1
    for step in range(spec.first_step, cfg.training.max_steps + 1):
        version = version_for(step, cfg.training.max_off_policy_steps)
        t0 = time.perf_counter()
        flat = weights.wait(version)
        if flat is None:  # asked to stop
            return
        wait_s = time.perf_counter() - t0
        if version != loaded:
            parts.model.load_state_dict(spec.layout.unpack(flat))
            loaded = version
        produced = produce_step(parts, step, version, wait_s)
        results.send_bytes(pickle.dumps(("produced", produced_to_device([produced], torch.device("cpu"))[0])))
    results.send_bytes(pickle.dumps(("done",)))


def build_parts(spec: GeneratorSpec, cfg: ExperimentConfig) -> GeneratorParts:
    """The child's ``GeneratorParts``: its policy copy (built as the run built its policy, then loaded with the
    published weights), the run's tokenizer, prompt sampler and sampling generator as they were at the start,
    and verifiers and rubric built from the config (the run's own were never used before the handover)."""
    import random

    import numpy as np

    from trainer.distributed.context import current
    from trainer.rubrics.scoring import build_rubric_scorer
    from trainer.step.run_setup import load_model, prepare_policy
    from trainer.verifiers.scoring import build_verifiers

    device = spec.device
    random.seed(cfg.seed)  # whatever draws from the global generators draws the same in every run
    np.random.seed(cfg.seed % 2**32)
    torch.manual_seed(cfg.seed)
    if device.type != "cpu" and device.index is not None:
        torch.accelerator.set_device_index(device.index)
    model = prepare_policy(load_model(spec.base_model_path, cfg, device), cfg, resumed=False)
    model = model.eval().requires_grad_(False)
    generator = torch.Generator(device=device)
    generator.set_state(spec.sampling_rng)
    verifiers = build_verifiers(cfg.verifiers)
    engine = stale_engine(model, spec.tokenizer)
    return GeneratorParts(
        config=cfg,
        model=model,
        tokenizer=spec.tokenizer,
        engine=engine,
        sampler=spec.sampler,
        generator=generator,
        sampling=spec.sampling,
        verifiers=verifiers,
        rubric=build_rubric_scorer(cfg.rubric, cfg.model.dtype, device, cfg.seed),
        device=device,
        dist=current(),
        episodes=episode_runner(cfg, engine, spec.tokenizer, verifiers),
    )


def _join_generator_group(spec: GeneratorSpec, timeout_s: int) -> None:
    """The generators' own gloo process group (their collectives are object all-gathers of the collection)."""
    import torch.distributed as dist

    os.environ.pop("TORCHELASTIC_USE_AGENT_STORE", None)  # torchrun's store is the trainers'
    dist.init_process_group(
        "gloo",
        init_method=spec.group_address,
        rank=spec.rank,
        world_size=spec.processes,
        timeout=timedelta(seconds=timeout_s),
    )


class _Inbox:
    """The published versions the child has received and not yet loaded."""

    def __init__(self, commands: socket.socket, layout: WeightLayout) -> None:
        self.commands = commands
        self.layout = layout
        self.pending: dict[int, torch.Tensor] = {}

    def wait(self, version: int) -> torch.Tensor | None:
        """Version ``version``'s buffer (older ones are dropped: steps need versions in order); None on stop."""
        while version not in self.pending:
            data, fds, _, _ = socket.recv_fds(self.commands, 4096, 1)
            if not data:  # the trainer closed its end
                return None
            message = pickle.loads(data)
            if message[0] == "stop":
                return None
            self.pending[message[1]] = self.layout.open(fds[0])
        for old in [v for v in self.pending if v < version]:
            del self.pending[old]
        return self.pending[version]


if __name__ == "__main__":  # the generator process (started by ProcessProducer)
    from trainer.step import generator_process

    generator_process.generator_main(int(sys.argv[1]), int(sys.argv[2]))
