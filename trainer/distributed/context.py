"""Data-parallel training inside a torchrun rank (issue 8 part 1): collectives, metric combination, events.

Every rank builds the same run (same seed) and draws the same prompts; each generates, scores and trains on
its contiguous share of the groups (``DistContext.share``). What spans the whole step is made global here:

* gradients: summed over ranks after the micro-batch accumulation (``all_reduce_grads``), before clipping.
  The step's loss normalisers (tokens / sequences / micro-batches in the step, trainer/methods/
  aggregation.py) are global sums too, so each rank's loss is its share of the global loss and the summed
  gradient is exactly the 1-process gradient of the same global batch. We all-reduce the flattened
  gradients ourselves instead of wrapping the model in DistributedDataParallel: DDP *averages* (we need the
  sum, since the normalisers already span the step), its per-bucket hooks would fire on every micro-batch
  unless each is wrapped in ``no_sync()``, and the wrapped module would have to be unwrapped again for the
  rollout engine, LoRA's adapter switch and ``save_pretrained``. Bucketed in-place all-reduces once per
  optimizer step (``GRAD_BUCKET_BYTES``, like DDP's buckets, so the extra memory is one bucket) move the same
  bytes as DDP's last-micro-batch sync (we lose only DDP's overlap with the backward pass).
* the prompt sampler's observations are all-gathered, so every rank's sampler state equals the 1-process one;
* statistics over the whole step (REINFORCE++'s whitening, GRPO's batch std, the top-entropy and HISPO
  quantiles, GAPO's rms) are taken over every rank's values (``all_ranks``, called inside the method) and
  applied to this rank's share; step-wide decisions (VIGOR's deal, dynamic sampling's refills) are computed
  by every rank from all-gathered group outcomes (trainer/step/collect.py);
* metrics and rollout records are gathered to rank 0 (``gather_report``), the only rank that reports and
  writes checkpoints.

Rank 0 reports through ``EventFileSink``: one JSON line per event, read and forwarded to the caller's sink
by the launching process (trainer/distributed/launch.py).
"""

from __future__ import annotations

import json
import math
import os
import time
from dataclasses import asdict, dataclass
from datetime import timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any

from trainer.sinks import PhaseReport, RolloutRecord, RunInfo, StepReport

if TYPE_CHECKING:
    import torch

RANK_ENV = (
    "RLVR_DIST_RANK"  # set by trainer.distributed.rank_main: this process is one rank of a launched run
)
FAULT_ENV = "RLVR_TEST_EXIT_RANK_AT_STEP"  # tests only: "rank:step" makes that rank os._exit(3) at that step
EVENTS_FILE = "events.jsonl"
STOP_FILE = "STOP"
# Gradients are all-reduced in flat buckets of at most this size (DDP's default bucket_cap_mb is 25 too).
GRAD_BUCKET_BYTES = 25 * 1024 * 1024


def in_rank() -> bool:
    """Whether this process is a rank started by the launcher (train() then trains instead of launching)."""
    return os.environ.get(RANK_ENV) is not None


@dataclass(frozen=True)
class DistContext:
    """This rank's place in the process group, and the few collectives the training step needs."""

    rank: int
    world_size: int

    @property
    def is_main(self) -> bool:
        return self.rank == 0

    def share(self, n: int) -> slice:
        """This rank's contiguous share of ``n`` items, in rank order: n / world_size each when it divides
        (prompts_per_step must: checked by the config), else the first n % world_size ranks take one more
        (dynamic sampling's refills)."""
        return balanced_share(n, self.rank, self.world_size)

    def all_reduce_sum(self, values: list[float]) -> list[float]:
        import torch
        import torch.distributed as dist

        t = torch.tensor(values, dtype=torch.float64, device=self._device())
        dist.all_reduce(t)
        return [float(x) for x in t.tolist()]

    def all_reduce_grads(
        self, params: list[torch.nn.Parameter], bucket_bytes: int = GRAD_BUCKET_BYTES
    ) -> None:
        """Sum the gradients of ``params`` over ranks, in place, bucket by bucket (``grad_buckets``): each
        ``p.grad`` keeps its tensor, and the extra memory at peak is one bucket's flat buffer (a gradient
        larger than a bucket is all-reduced on its own, without a copy). A parameter without a gradient on
        this rank gets zeros first, so every rank issues the same collectives, and then the reduced sum."""
        import torch

        for p in params:
            if p.grad is None:
                p.grad = torch.zeros_like(p)
        grads = [p.grad for p in params if p.grad is not None]
        for bucket in grad_buckets(grads, bucket_bytes):
            _all_reduce_in_place([grads[i] for i in bucket])

    def broadcast_flag(self, flag: bool) -> bool:
        """Rank 0's ``flag`` on every rank (the stop decision at a step boundary)."""
        import torch
        import torch.distributed as dist

        t = torch.tensor([1 if flag else 0], dtype=torch.long, device=self._device())
        dist.broadcast(t, src=0)
        return bool(t.item())

    def all_gather(self, obj: Any) -> list[Any]:
        import torch.distributed as dist

        out: list[Any] = [None] * self.world_size
        dist.all_gather_object(out, obj)
        return out

    def all_gather_cat(self, values: torch.Tensor) -> torch.Tensor:
        """Every rank's 1-D ``values`` joined in rank order (their lengths may differ), with ``values``' dtype
        and device: two tensor all-gathers (the lengths, then the values padded to the longest)."""
        import torch
        import torch.distributed as dist

        device = self._device()
        length = torch.tensor([values.numel()], dtype=torch.long, device=device)
        lengths = [torch.zeros_like(length) for _ in range(self.world_size)]
        dist.all_gather(lengths, length)
        counts = [int(n) for n in lengths]
        padded = torch.zeros(max(max(counts), 1), dtype=values.dtype, device=device)
        padded[: values.numel()] = values.reshape(-1).to(device)
        parts = [torch.empty_like(padded) for _ in counts]
        dist.all_gather(parts, padded)
        return torch.cat([part[:n] for part, n in zip(parts, counts, strict=True)]).to(values.device)

    def gather(self, obj: Any) -> list[Any] | None:
        """Every rank's ``obj`` on rank 0 (in rank order), None elsewhere."""
        import torch.distributed as dist

        out: list[Any] | None = [None] * self.world_size if self.is_main else None
        dist.gather_object(obj, out, dst=0)
        return out

    def barrier(self) -> None:
        import torch.distributed as dist

        dist.barrier()

    def _device(self) -> torch.device:
        import torch
        import torch.distributed as dist

        if dist.get_backend() == "gloo":
            return torch.device("cpu")
        accelerator = torch.accelerator.current_accelerator()
        if accelerator is None:
            return torch.device("cpu")
        return torch.device(accelerator.type, torch.accelerator.current_device_index())

    def gather_report(self, report: StepReport) -> StepReport:
        """Rank 0: the step's report over all ranks (metrics combined, records of every rank with global
        group indices). Other ranks get their own report back (they report nothing).

        A rank's records number its groups from 0; they are shifted by the groups of the ranks before it,
        counted from the records themselves, since shares may differ (dynamic sampling trains on however many
        informative groups it found)."""
        groups = 1 + max((r.group for r in report.rollouts), default=-1)
        parts = self.gather((report.metrics, len(report.rollouts), report.rollouts, groups))
        if parts is None:
            return report
        if _STEP.replicated:  # every rank trained on the whole step: one rank's records and metrics
            metrics = dict(report.metrics)
            for key in _SUMMED_WHEN_REPLICATED & metrics.keys():
                metrics[key] = sum(m[key] for m, _, _, _ in parts)
            return StepReport(
                step=report.step,
                max_steps=report.max_steps,
                metrics=metrics,
                rollouts=report.rollouts,
                elapsed_s=report.elapsed_s,
            )
        metrics = combine_metrics([(m, n) for m, n, _, _ in parts])
        records: list[RolloutRecord] = []
        offset = 0
        for _, _, rank_records, rank_groups in parts:
            for r in rank_records:
                r.group += offset
            records += rank_records
            offset += rank_groups
        return StepReport(
            step=report.step,
            max_steps=report.max_steps,
            metrics=metrics,
            rollouts=records,
            elapsed_s=report.elapsed_s,
        )


def grad_buckets(grads: list[torch.Tensor], bucket_bytes: int = GRAD_BUCKET_BYTES) -> list[list[int]]:
    """Indices of ``grads`` grouped in order into buckets of consecutive tensors of one dtype and device, of
    at most ``bucket_bytes`` together; a tensor larger than that is a bucket of its own."""
    buckets: list[list[int]] = []
    size = 0
    for i, g in enumerate(grads):
        nbytes = g.numel() * g.element_size()
        last = grads[buckets[-1][-1]] if buckets else None
        if last is None or (last.dtype, last.device) != (g.dtype, g.device) or size + nbytes > bucket_bytes:
            buckets.append([])
            size = 0
        buckets[-1].append(i)
        size += nbytes
    return buckets


def _all_reduce_in_place(grads: list[torch.Tensor]) -> None:
    """One all-reduce (sum) for a bucket: a lone contiguous tensor directly, else through one flat buffer
    whose slices are copied back into the tensors (no new tensors are left behind)."""
    import torch
    import torch.distributed as dist

    if len(grads) == 1 and grads[0].is_contiguous():
        dist.all_reduce(grads[0])
        return
    flat = torch.cat([g.reshape(-1) for g in grads])  # [sum of numel]
    dist.all_reduce(flat)
    offset = 0
    for g in grads:
        n = g.numel()
        g.copy_(flat[offset : offset + n].view(g.shape))
        offset += n


def balanced_share(n: int, rank: int, world_size: int) -> slice:
    """Rank ``rank``'s contiguous share of ``n`` items split over ``world_size`` ranks as evenly as possible."""
    per, extra = divmod(n, world_size)
    start = rank * per + min(rank, extra)
    return slice(start, start + per + (1 if rank < extra else 0))


def current() -> DistContext | None:
    """The context of an initialised process group with more than one rank, else None (plain runs)."""
    import torch.distributed as dist

    if not (dist.is_available() and dist.is_initialized()) or dist.get_world_size() < 2:
        return None
    return DistContext(rank=dist.get_rank(), world_size=dist.get_world_size())


@dataclass
class _StepLayout:
    replicated: bool = False


# How the current step's groups lie over the ranks; set by the collect stage (trainer/step/collect.py).
_STEP = _StepLayout()


def set_step_replicated(replicated: bool) -> None:
    """The collect stage says whether this step is *replicated*: fewer groups than ranks (dynamic sampling
    found only that many), so every rank trains on all of them instead of a share. The update is still the
    1-process one: the loss normalisers are summed over ranks, so each rank's loss is 1/world_size of the
    step's and the summed gradient is the step's. Step-wide statistics then need no gather (``all_ranks``), and
    the report keeps one rank's records (``gather_report``)."""
    _STEP.replicated = replicated


def step_replicated() -> bool:
    """Whether the collect stage last called here found the step replicated: an asynchronous run's generator
    process collects in a process of its own and hands this to the trainer with the step's rollouts."""
    return _STEP.replicated


def all_ranks(values: torch.Tensor) -> torch.Tensor:
    """A step-wide view of a 1-D tensor: every rank's ``values`` joined in rank order inside a data-parallel
    run (ranks hold contiguous shares of the groups, so this is the 1-process order), ``values`` itself in one
    process or a replicated step. For the methods whose statistic spans the step; every rank must call it at
    the same point."""
    ctx = current()
    return values if ctx is None or _STEP.replicated else ctx.all_gather_cat(values)


def init_process_group(device_type: str, timeout_s: int) -> DistContext:
    """Join the torchrun group: gloo on CPU, NCCL on GPUs (one per rank, by LOCAL_RANK)."""
    import torch
    import torch.distributed as dist

    backend = "gloo" if device_type == "cpu" else "nccl"
    if backend == "nccl":
        torch.accelerator.set_device_index(int(os.environ.get("LOCAL_RANK", "0")))
    dist.init_process_group(backend, timeout=timedelta(seconds=timeout_s))
    return DistContext(rank=dist.get_rank(), world_size=dist.get_world_size())


def fault_point(ctx: DistContext | None, step: int) -> None:
    """Tests only (tests/trainer/test_distributed_runs.py): with RLVR_TEST_EXIT_RANK_AT_STEP set to 'rank:step',
    that rank exits hard at the start of that step, as a crashed or OOM-killed one would; 'rank:step:hang'
    makes it hang instead (the others then fail after training.collective_timeout_s)."""
    spec = os.environ.get(FAULT_ENV)
    if ctx is None or not spec:
        return
    rank, at, *mode = spec.split(":")
    if ctx.rank == int(rank) and step == int(at):
        if mode == ["hang"]:
            time.sleep(10**6)
        os._exit(3)


# Metric combination: how each rank's value of a key becomes the step's value.
_SUMMED = {
    # policy_update divides these by the GLOBAL token count and the losses use global normalisers, so each
    # rank's value is its share of the step's value
    "actor/loss",
    "actor/pg_loss",
    "actor/kl",
    "actor/entropy",
    "actor/clip_frac",
    "actor/dual_clip_frac",
    "budget/rollouts_generated",
    "budget/rollouts_used",
    "budget/prompts_drawn",
    "budget/dropped_groups",
    "budget/abandoned_groups",
    "budget/silent_rollouts",
    "rarity/groups_redistributed",
    "budget/tokens_generated",
    "process/mc_tokens",  # Monte-Carlo step values: each rank continues its own rollouts' prefixes
    "process/mc_prefixes",
    "perf/gen_tokens_per_s",
    "perf/train_tokens_per_s",  # the run's aggregate throughputs
    "perf/step_tokens",  # each rank's rollouts' tokens (trainer/step/progress.py sums them over steps)
}
# A replicated step (``set_step_replicated``): generation was still shared out, and each rank's actor/* value is
# its 1/world_size share of the step's; every other value is the step's on every rank.
_SUMMED_WHEN_REPLICATED = {
    "actor/loss",
    "actor/pg_loss",
    "actor/kl",
    "actor/entropy",
    "actor/clip_frac",
    "actor/dual_clip_frac",
    "budget/rollouts_generated",
    "budget/prompts_drawn",
    "budget/abandoned_groups",
    "budget/silent_rollouts",
    "budget/tokens_generated",
    "process/mc_tokens",  # Monte-Carlo step values: each rank continues its own rollouts' prefixes
    "process/mc_prefixes",
    "perf/gen_tokens_per_s",
}
# Equal on every rank (after the gradient all-reduce, or computed from all-gathered state).
_IDENTICAL = {
    "actor/grad_norm",
    "actor/lr",
    "budget/cumulative_rollouts",
    "budget/generation_rounds",
    "budget/generation_calls",
    # over the step's groups, from the all-gathered group outcomes (trainer/step/collect.py)
    "budget/silent_group_frac",
    "budget/group_size_mean",
}


def combine_metrics(parts: list[tuple[dict[str, float], int]]) -> dict[str, float]:
    """One step's metrics from every rank's ``(metrics, completions)``: sums for counts and shares, max for
    maxima and wall-clock timings (the slowest rank sets the pace), min for minima, identical values once,
    ``rollout/reward_std`` pooled exactly, and everything else a mean weighted by completions."""
    total = sum(n for _, n in parts) or 1
    out: dict[str, float] = {}
    for key in parts[0][0]:
        values = [m[key] for m, _ in parts if key in m]
        if key in _SUMMED:
            out[key] = sum(values)
        elif key in _IDENTICAL or key.startswith("eval/"):
            out[key] = values[0]
        elif key.endswith("_max") or key.startswith("perf/"):
            out[key] = max(values)
        elif key.endswith("_min"):
            out[key] = min(values)
        elif key == "rollout/reward_std":
            out[key] = _pooled_std(parts)
        else:
            out[key] = sum(m[key] * n for m, n in parts if key in m) / total
    return out


def _pooled_std(parts: list[tuple[dict[str, float], int]]) -> float:
    """The sample std of all completions' rewards from each rank's count, mean and sample std."""
    n = sum(k for _, k in parts)
    if n < 2:
        return 0.0
    mean = sum(m["rollout/reward_mean"] * k for m, k in parts) / n
    ss = sum((k - 1) * m["rollout/reward_std"] ** 2 + k * m["rollout/reward_mean"] ** 2 for m, k in parts)
    return math.sqrt(max(ss - n * mean**2, 0.0) / (n - 1))


class EventFileSink:
    """Rank 0's sink: each event one JSON line, flushed, for the launching process to forward.

    Errors are not sent from here: every rank writes its own ``rank<N>.error.json`` (trainer/distributed/rank_main.py)
    and the launcher reports the one that failed first.
    """

    def __init__(self, workdir: str | Path) -> None:
        self.path = Path(workdir) / EVENTS_FILE

    def _write(self, event: dict[str, Any]) -> None:
        with open(self.path, "a", encoding="utf-8") as fh:
            fh.write(json.dumps(event, allow_nan=True) + "\n")

    def log(self, message: str) -> None:
        self._write({"event": "log", "message": message})

    def on_phase(self, phase: PhaseReport) -> None:
        self._write({"event": "phase", "phase": asdict(phase)})

    def on_start(self, info: RunInfo) -> None:
        self._write({"event": "start", "info": asdict(info)})

    def on_step(self, report: StepReport) -> None:
        self._write({"event": "step", "report": asdict(report)})

    def on_checkpoint(self, step: int, path: str) -> None:
        self._write({"event": "checkpoint", "step": step, "path": path})

    def on_end(self, status: str, final_metrics: dict[str, float]) -> None:
        self._write({"event": "end", "status": status, "metrics": final_metrics})

    def on_error(self, message: str, traceback_text: str) -> None:
        pass

    def on_warning(self, step: int, kind: str, message: str) -> None:
        self._write({"event": "warning", "step": step, "kind": kind, "message": message})

    def on_result(self, status: str, steps_done: int, final_metrics: dict[str, float]) -> None:
        self._write(
            {
                "event": "result",
                "status": status,
                "steps_done": steps_done,
                "metrics": final_metrics,
                "time": time.time(),
            }
        )


def step_report_from_json(data: dict[str, Any]) -> StepReport:
    return StepReport(
        step=data["step"],
        max_steps=data["max_steps"],
        metrics=data["metrics"],
        rollouts=[RolloutRecord(**r) for r in data["rollouts"]],
        elapsed_s=data["elapsed_s"],
    )


def run_info_from_json(data: dict[str, Any]) -> RunInfo:
    return RunInfo(**data)
