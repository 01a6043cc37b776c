"""Where a run reports to: the ``EventSink`` protocol and the console / JSONL / null sinks.

The trainer knows nothing about who listens. The web side adds its own sink (workers' DjangoRunSink)
that writes to the database and pushes to the browser; the CLI uses the console and JSONL sinks.

A ``RolloutRecord`` is the unit the dashboard browses (DESIGN.md, "Stable names"): one completion with
its reward breakdown and per-token arrays. Per-token arrays are plain Python lists of equal length
(one entry per completion token); ``pack_token_arrays`` turns them into compact bytes for storage.
"""

from __future__ import annotations

import json
import math
import struct
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field, fields, is_dataclass
from pathlib import Path
from typing import IO, Any, Protocol

# Per-token float channels, in the order they are packed. A channel absent for a rollout is all-NaN.
TOKEN_CHANNELS: tuple[str, ...] = (
    "logprob",  # log pi_old(y_t) as sampled (temperature applied)
    "old_logprob",  # the behaviour logprob used in the ratio
    "ref_logprob",  # reference model (KL) logprob, NaN when absent
    "entropy",  # policy entropy at the position (nats)
    "advantage",  # final per-token advantage after token credit
    "loss_mask",  # 1.0 if the token is in the loss
    "teacher_logprob",  # log pi_teacher(y_t) of the sampled token (OPD / OPSD, trainer/step/teacher.py), NaN without one
    "teacher_entropy",  # full-vocabulary teacher entropy at the position (nats), NaN without a teacher
    "segment",  # HISPO segment index within the completion (0, 1, ...; trainer/methods/segments.py), NaN otherwise
    "step_score",  # process_reward: the score of the token's step (trainer/process/), NaN when absent or unscored
    "env_token",  # environment: 1.0 for a token the environment wrote (never trained), 0.0 for the model's; NaN single-turn
)


@dataclass
class TrainResult:
    """What ``train`` returns (also after a multi-process launch)."""

    status: str  # "succeeded" | "cancelled"
    steps_done: int
    final_metrics: dict[str, float]
    output_dir: str


@dataclass
class RolloutRecord:
    """One completion of one step, with everything the rollout browser shows."""

    step: int
    prompt_id: str
    group: int  # index of the prompt within the step
    sample_index: int  # index of the completion within its group
    prompt: str
    completion: str
    finish_reason: str  # "eos" | "length"
    reward: float
    rewards: dict[str, float | None]  # per verifier key, raw (before reward_weights); None: no score (absent)
    correct: bool
    details: dict[str, dict[str, Any]]  # verifier key -> detail record
    advantage: float  # scalar (sequence-level) advantage before token credit
    token_ids: list[int]
    tokens: list[str]
    token_values: dict[str, list[float]] = field(default_factory=dict)  # channel -> per-token floats
    answer: str | None = None

    def summary(self) -> dict[str, Any]:
        """A short JSON-friendly digest for realtime events (no per-token arrays)."""
        return {
            "prompt_id": self.prompt_id,
            "group": self.group,
            "sample_index": self.sample_index,
            "reward": self.reward,
            "correct": self.correct,
            "advantage": self.advantage,
            "finish_reason": self.finish_reason,
            "length": len(self.token_ids),
            "completion": self.completion[:200],
        }


def pack_token_arrays(record: RolloutRecord) -> bytes:
    """Pack token ids and every channel into one little-endian blob: ``n`` (u32), ids (i32 x n), then
    one float32 x n block per channel of TOKEN_CHANNELS (NaN where absent). ~24 bytes/token."""
    n = len(record.token_ids)
    parts = [struct.pack("<I", n), struct.pack(f"<{n}i", *record.token_ids)]
    nan_block = [math.nan] * n
    for channel in TOKEN_CHANNELS:
        values = record.token_values.get(channel, nan_block)
        if len(values) != n:
            raise ValueError(f"channel {channel!r} has {len(values)} values for {n} tokens")
        parts.append(struct.pack(f"<{n}f", *values))
    return b"".join(parts)


def unpack_token_arrays(blob: bytes) -> tuple[list[int], dict[str, list[float]]]:
    """Inverse of ``pack_token_arrays``: (token ids, channel -> values). Channels appended to TOKEN_CHANNELS
    after a blob was packed read as all-NaN (not recorded), so stored rollouts stay readable."""
    (n,) = struct.unpack_from("<I", blob, 0)
    offset = 4
    ids = list(struct.unpack_from(f"<{n}i", blob, offset))
    offset += 4 * n
    channels: dict[str, list[float]] = {}
    for channel in TOKEN_CHANNELS:
        if offset + 4 * n > len(blob):  # packed before this channel was appended to TOKEN_CHANNELS
            channels[channel] = [math.nan] * n
            continue
        channels[channel] = list(struct.unpack_from(f"<{n}f", blob, offset))
        offset += 4 * n
    return ids, channels


@dataclass
class StepReport:
    """What one training step produced."""

    step: int  # 1-based; 0 for the evaluation before the first update (evaluation.eval_at_start), which has no rollouts
    max_steps: int
    metrics: dict[str, float]  # stable namespaced keys, e.g. rollout/reward_mean, actor/pg_loss
    rollouts: list[RolloutRecord]
    elapsed_s: float


@dataclass
class RunInfo:
    """Sent once when the run starts (or resumes)."""

    name: str
    max_steps: int
    start_step: int  # 0 for a fresh run, the checkpoint's step when resuming
    config: dict[str, Any]
    num_parameters: int
    device: str


@dataclass(frozen=True)
class PhaseReport:
    """How far a long stretch of a run outside its steps is, e.g. building the built-in model before
    step 1 (which took half an hour on a slow machine while the run page still said "step 0").

    Sent by ``build_run`` (trainer/step/run_setup.py) throttled by ``throttle_phases``: the first and the
    last report of each phase always, at most ``PHASE_INTERVAL_S`` apart in between."""

    name: str  # stable machine name, e.g. "building_model"
    label: str  # for people, e.g. "Building the built-in model tiny:addition (warm-start SFT, once)"
    subject: str  # what the phase works on, e.g. "tiny:addition"
    done: int  # units done (warm-start SFT steps)
    total: int  # units in all
    elapsed_s: float  # since the phase began
    eta_s: float | None  # seconds left at the rate so far; None before the first unit

    @property
    def finished(self) -> bool:
        return self.done >= self.total


PhaseCallback = Callable[[PhaseReport], None]
PHASE_INTERVAL_S = (
    0.5  # at most ~2 reports a second reach the sinks (one database write each on the web side)
)


def throttle_phases(
    on_phase: PhaseCallback, interval_s: float = PHASE_INTERVAL_S, clock: Callable[[], float] = time.monotonic
) -> PhaseCallback:
    """Wrap ``on_phase`` so that it hears the first report of each phase (a new name or subject), the
    last one (``finished``), and otherwise at most one report per ``interval_s``: a warm start reports
    every SFT step, dozens a second, and each report costs the web side a write and a push."""
    last: dict[str, Any] = {"key": None, "at": -math.inf}

    def forward(report: PhaseReport) -> None:
        key, now = (report.name, report.subject), clock()
        if key != last["key"] or report.finished or now - last["at"] >= interval_s:
            last["key"], last["at"] = key, now
            on_phase(report)

    return forward


def format_duration(seconds: float) -> str:
    """Like ``window.rlvr.formatDuration`` (static/js/common.js): "45s", "3m 5s", "1h 2m"."""
    s = max(0, round(seconds))
    if s < 60:
        return f"{s}s"
    if s < 3600:
        return f"{s // 60}m {s % 60}s"
    minutes = round(s / 60)
    return f"{minutes // 60}h {minutes % 60}m"


def time_left_text(seconds: float | None, *, finished: bool) -> str:
    """The words after a phase's count on the run page (webapp/experiments/phases.py; mirrored by
    phaseTimeLeft in static/js/run.js) and in ``rlvr init-model``."""
    if finished:
        return "done, loading"
    if seconds is None:
        return "estimating time left"
    return f"about {format_duration(seconds)} left"


def phase_line(phase: PhaseReport) -> str:
    """A phase as the run page words it: "Building the built-in model tiny:chain (warm-start SFT, once): 120 / 800
    steps · about 3m 2s left"; a finished one says how long it took."""
    if phase.finished:
        return (
            f"{phase.label}: {phase.done} / {phase.total} steps · done in {format_duration(phase.elapsed_s)}"
        )
    return (
        f"{phase.label}: {phase.done} / {phase.total} steps · {time_left_text(phase.eta_s, finished=False)}"
    )


class PhaseLines:
    """A ``PhaseCallback`` that prints ``phase_line``: in a terminal one line rewritten in place; elsewhere (a
    log file, a pipe, ``make``) a new line for a phase's first and last report and at most one per
    ``interval_s`` in between, so a build of minutes is never silent and never floods a log."""

    def __init__(
        self,
        stream: IO[str] | None = None,
        interval_s: float = 10.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.stream = stream or sys.stderr
        self.interval_s = interval_s
        self.clock = clock
        self._last: tuple[tuple[str, str], float] | None = (
            None  # (phase, subject), when its last line was printed
        )

    def __call__(self, phase: PhaseReport) -> None:
        key, now = (phase.name, phase.subject), self.clock()
        if self.stream.isatty():
            self.stream.write(f"\r\033[K{phase_line(phase)}" + ("\n" if phase.finished else ""))
        elif (
            self._last is None
            or self._last[0] != key
            or phase.finished
            or now - self._last[1] >= self.interval_s
        ):
            self.stream.write(phase_line(phase) + "\n")
            self._last = (key, now)
        self.stream.flush()


class EventSink(Protocol):
    """Receives a run's events. Implementations must not raise for display problems.

    A sink may also define ``on_warning(step, kind, message)`` (``warning_listener``): something a person should
    see about the run that does not stop it, e.g. the reward-hacking watch firing (trainer/rewards/hacking.py).
    It is optional, so sinks written before it keep working."""

    def on_phase(self, phase: PhaseReport) -> None: ...

    def on_start(self, info: RunInfo) -> None: ...

    def on_step(self, report: StepReport) -> None: ...

    def on_checkpoint(self, step: int, path: str) -> None: ...

    def on_end(self, status: str, final_metrics: dict[str, float]) -> None: ...

    def on_error(self, message: str, traceback_text: str) -> None: ...


WarningCallback = Callable[[int, str, str], None]  # (step, kind, message)


def warning_listener(sink: object) -> WarningCallback | None:
    """``sink.on_warning``, or None for a sink that does not take warnings."""
    return getattr(sink, "on_warning", None)


class NullSink:
    """Discards everything (tests, library use)."""

    def on_warning(self, step: int, kind: str, message: str) -> None:
        pass

    def on_phase(self, phase: PhaseReport) -> None:
        pass

    def on_start(self, info: RunInfo) -> None:
        pass

    def on_step(self, report: StepReport) -> None:
        pass

    def on_checkpoint(self, step: int, path: str) -> None:
        pass

    def on_end(self, status: str, final_metrics: dict[str, float]) -> None:
        pass

    def on_error(self, message: str, traceback_text: str) -> None:
        pass


class MultiSink:
    """Fans events out to several sinks in order."""

    def __init__(self, sinks: Sequence[EventSink]) -> None:
        self.sinks = list(sinks)

    def on_phase(self, phase: PhaseReport) -> None:
        for s in self.sinks:
            s.on_phase(phase)

    def on_start(self, info: RunInfo) -> None:
        for s in self.sinks:
            s.on_start(info)

    def on_step(self, report: StepReport) -> None:
        for s in self.sinks:
            s.on_step(report)

    def on_checkpoint(self, step: int, path: str) -> None:
        for s in self.sinks:
            s.on_checkpoint(step, path)

    def on_end(self, status: str, final_metrics: dict[str, float]) -> None:
        for s in self.sinks:
            s.on_end(status, final_metrics)

    def on_error(self, message: str, traceback_text: str) -> None:
        for s in self.sinks:
            s.on_error(message, traceback_text)

    def on_warning(self, step: int, kind: str, message: str) -> None:
        for s in self.sinks:
            listener = warning_listener(s)
            if listener is not None:
                listener(step, kind, message)


def _parsed(line: str) -> dict[str, Any] | None:
    """One JSONL row, or None for a blank line or the half-written last line of a killed run."""
    try:
        row = json.loads(line) if line.strip() else None
    except json.JSONDecodeError:
        return None
    return row if isinstance(row, dict) else None


def _shallow_dict(record: RolloutRecord) -> dict[str, Any]:
    """The record's fields as a dict without ``asdict``'s deep copy of every per-token list (a third of the
    sink's time on a small step); json.dumps reads the lists in place."""
    return {f.name: getattr(record, f.name) for f in fields(record)}


def _nested_dataclass(value: Any) -> Any:
    """json.dumps' fallback: a dataclass inside a record's details is written as ``asdict`` would."""
    if is_dataclass(value) and not isinstance(value, type):
        return asdict(value)
    raise TypeError(f"{type(value).__name__} is not JSON serializable")


class JsonlSink:
    """Appends metrics to ``metrics.jsonl`` and rollouts to ``rollouts.jsonl`` in the run directory.

    On resume, lines of steps after the resumed checkpoint are dropped first, so a crashed run's
    partial tail never duplicates steps.
    """

    def __init__(self, run_dir: str | Path, write_rollouts: bool = True) -> None:
        self.run_dir = Path(run_dir)
        self.write_rollouts = write_rollouts

    def _truncate_after(self, name: str, step: int) -> None:
        path = self.run_dir / name
        if not path.exists():
            return
        kept = [
            line
            for line in path.read_text(encoding="utf-8", errors="replace").splitlines()
            if (row := _parsed(line)) is not None and row.get("step", 0) <= step
        ]
        path.write_text("".join(line + "\n" for line in kept), encoding="utf-8")

    def _append(self, name: str, rows: list[dict[str, Any]]) -> None:
        text = "".join(json.dumps(row, allow_nan=True, default=_nested_dataclass) + "\n" for row in rows)
        with open(self.run_dir / name, "a", encoding="utf-8") as fh:
            fh.write(text)

    def on_phase(self, phase: PhaseReport) -> None:
        """A phase's first and last report go to ``events.jsonl`` (step 0, so a resume keeps them); the
        ones in between only feed live displays."""
        if phase.done > 1 and not phase.finished:
            return
        self.run_dir.mkdir(parents=True, exist_ok=True)
        self._append("events.jsonl", [{"step": 0, "event": "phase", "time": time.time(), **asdict(phase)}])

    def on_start(self, info: RunInfo) -> None:
        self.run_dir.mkdir(parents=True, exist_ok=True)
        for name in ("metrics.jsonl", "rollouts.jsonl", "events.jsonl"):
            self._truncate_after(name, info.start_step)
        self._append("events.jsonl", [{"step": info.start_step, "event": "start", "time": time.time()}])

    def on_step(self, report: StepReport) -> None:
        self._append("metrics.jsonl", [{"step": report.step, **report.metrics}])
        if self.write_rollouts:
            self._append("rollouts.jsonl", [_shallow_dict(r) for r in report.rollouts])

    def on_checkpoint(self, step: int, path: str) -> None:
        self._append("events.jsonl", [{"step": step, "event": "checkpoint", "path": path}])

    def on_end(self, status: str, final_metrics: dict[str, float]) -> None:
        self._append("events.jsonl", [{"step": 10**12, "event": "end", "status": status}])

    def on_warning(self, step: int, kind: str, message: str) -> None:
        self._append("events.jsonl", [{"step": step, "event": "warning", "kind": kind, "message": message}])

    def on_error(self, message: str, traceback_text: str) -> None:
        self._append("events.jsonl", [{"step": 10**12, "event": "error", "message": message}])


def eval_summary(metrics: dict[str, float]) -> str:
    """``eval/<benchmark>/<metric>`` values of a step as one line ("chain_arithmetic accuracy (greedy) 0.086"),
    timings left out; "" when the step was not evaluated."""
    parts = [
        f"{key.removeprefix('eval/').replace('/', ' ', 1)} {value:.3f}"
        for key, value in metrics.items()
        if key.startswith("eval/") and not key.endswith(("/eval_s", "/response_len_mean", "/truncated"))
    ]
    return "  ".join(parts)


class ConsoleSink:
    """A rich progress bar with the live reward, plus a one-line summary every ``log_every`` steps."""

    def __init__(self, log_every: int = 10, stream: IO[str] | None = None) -> None:
        from rich.console import Console

        self.log_every = max(1, log_every)
        self.console = Console(file=stream or sys.stderr)
        self._progress: Any = None
        self._task: Any = None
        self._phase_progress: Any = None
        self._phase_tasks: dict[tuple[str, str], Any] = {}
        self._phase_lines = PhaseLines(self.console.file)

    def on_phase(self, phase: PhaseReport) -> None:
        """A progress bar with the time left while a phase runs (one bar per model built), then one
        line saying how long it took; rich redraws at its own rate, so frequent updates cost little."""
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

        if (
            not self.console.is_terminal
        ):  # rich draws no bar there: plain lines, as ``rlvr init-model`` prints
            self._phase_lines(phase)
            return
        if self._phase_progress is None:
            self._phase_progress = Progress(
                TextColumn("{task.description}"),
                BarColumn(),
                MofNCompleteColumn(),
                TimeRemainingColumn(),
                console=self.console,
                transient=False,
            )
            self._phase_progress.start()
        key = (phase.name, phase.subject)
        if key not in self._phase_tasks:
            self._phase_tasks[key] = self._phase_progress.add_task(phase.label, total=phase.total)
        self._phase_progress.update(self._phase_tasks[key], completed=phase.done, total=phase.total)
        if phase.finished:
            self._phase_progress.stop()
            self._phase_progress, self._phase_tasks = None, {}
            self.console.print(f"[dim]{phase.label}: done in {phase.elapsed_s:.0f}s[/dim]")

    def on_start(self, info: RunInfo) -> None:
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

        self.console.print(
            f"[bold]{info.name}[/bold]: {info.num_parameters / 1e6:.2f}M parameters on {info.device}, "
            f"steps {info.start_step + 1}..{info.max_steps}"
        )
        self._progress = Progress(
            TextColumn("[progress.description]{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn("{task.fields[status]}"),
            TimeRemainingColumn(),
            console=self.console,
            transient=False,
        )
        self._progress.start()
        self._task = self._progress.add_task(
            "training", total=info.max_steps, completed=info.start_step, status=""
        )

    def on_step(self, report: StepReport) -> None:
        m = report.metrics
        status = (
            f"reward {m.get('rollout/reward_mean', float('nan')):.3f} "
            f"acc {m.get('rollout/accuracy', float('nan')):.3f} "
            f"{m.get('perf/step_s', float('nan')):.2f}s/step"
        )
        if self._progress is not None:
            self._progress.update(self._task, completed=report.step, status=status)
        if report.step and (report.step % self.log_every == 0 or report.step == report.max_steps):
            self.console.print(
                f"step {report.step:>5}  reward {m.get('rollout/reward_mean', 0):.3f}  "
                f"acc {m.get('rollout/accuracy', 0):.3f}  loss {m.get('actor/pg_loss', 0):+.4f}  "
                f"len {m.get('rollout/response_len_mean', 0):.1f}  zero_std {m.get('rollout/zero_std_frac', 0):.2f}"
            )
        evaluated = eval_summary(m)
        if evaluated:  # periodic evaluation (and step 0, before training): every time, it is the headline
            self.console.print(f"step {report.step:>5}  eval {evaluated}")

    def on_checkpoint(self, step: int, path: str) -> None:
        self.console.print(f"[dim]checkpoint step {step} -> {path}[/dim]")

    def on_warning(self, step: int, kind: str, message: str) -> None:
        from rich.markup import escape

        self.console.print(f"[bold yellow]warning:[/bold yellow] {escape(message)}", highlight=False)

    def _stop(self) -> None:
        if self._phase_progress is not None:
            self._phase_progress.stop()
            self._phase_progress = None
        if self._progress is not None:
            self._progress.stop()
            self._progress = None

    def on_end(self, status: str, final_metrics: dict[str, float]) -> None:
        self._stop()
        self.console.print(f"[bold]run {status}[/bold]")

    def on_error(self, message: str, traceback_text: str) -> None:
        self._stop()
        self.console.print(f"[bold red]error:[/bold red] {message}")
