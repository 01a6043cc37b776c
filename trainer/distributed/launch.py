"""Launching a data-parallel run (issue 8): ``train()`` with ``training.num_processes`` N > 1 ends up here.

``launch`` starts ``python -m torch.distributed.run --standalone --nproc-per-node N -m trainer.distributed.rank_main`` as
a child process group, forwards rank 0's events (trainer/distributed/context.py ``EventFileSink``) to the caller's
sink as they arrive, turns ``should_stop`` into a ``STOP`` file that rank 0 sees at the next step boundary
(the ranks then save a resumable checkpoint and end 'cancelled'), and kills the whole process group when it
returns, raises or is interrupted (and, on Linux, torchrun dies with it even when it is SIGKILLed), so no
rank outlives it. A rank that dies fails the run with the torchrun
exit status and the failing rank's last output lines; the run resumes from its last checkpoint as usual.

The work directory is ``<checkpoint.output_dir>/distributed/`` (config, events, per-rank logs); it is kept
after the run for debugging and cleared when the next launch in that output directory starts.

Across hosts (``training.num_nodes`` > 1, a ``NodeSpec`` from trainer/distributed/rendezvous.py) each node's
launcher starts one torchrun agent that meets the others at the c10d rendezvous instead of ``--standalone``;
its work directory is ``<output_dir>/distributed/node-<name>/`` (the output directory is shared). The node
whose process got global rank 0 relays the run's events; every other node returns the result its local
rank 0 recorded. A node that fails reports the failure too; a rendezvous that timed out names who joined.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from trainer.distributed.context import EVENTS_FILE, STOP_FILE, run_info_from_json, step_report_from_json
from trainer.distributed.rendezvous import NodeSpec, join_failure_message, timed_out_joining
from trainer.errors import ConfigError, RLVRError
from trainer.sinks import EventSink, PhaseReport, TrainResult, warning_listener

if TYPE_CHECKING:
    from trainer.config import ExperimentConfig

POLL_S = 0.2
TAIL_LINES = 30
KILL_GRACE_S = 10.0


class DistributedRunError(RLVRError):
    """A rank of a data-parallel run failed; the message says which, how, and how to resume."""


class _EventReader:
    """New complete lines of the events file since the last read."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.offset = 0
        self.partial = b""

    def read(self) -> list[dict[str, Any]]:
        if not self.path.exists():
            return []
        with open(self.path, "rb") as fh:
            fh.seek(self.offset)
            data = fh.read()
        self.offset += len(data)
        data = self.partial + data
        lines = data.split(b"\n")
        self.partial = lines.pop()  # an incomplete last line waits for the next read
        return [json.loads(line) for line in lines if line.strip()]


def _tail(path: Path, n: int = TAIL_LINES) -> str:
    if not path.exists():
        return ""
    lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
    return "\n".join(lines[-n:])


def _kill_group(proc: subprocess.Popen[bytes]) -> None:
    """SIGTERM the launched process group (torchrun and its ranks), then SIGKILL what is left."""
    try:
        os.killpg(proc.pid, signal.SIGTERM)
    except ProcessLookupError:
        return
    with contextlib.suppress(subprocess.TimeoutExpired):
        proc.wait(timeout=KILL_GRACE_S)
    deadline = time.monotonic() + KILL_GRACE_S
    while time.monotonic() < deadline:
        try:
            os.killpg(proc.pid, 0)  # anyone left in the group (ranks outliving torchrun)?
        except ProcessLookupError:
            break
        time.sleep(0.1)
    else:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
    if proc.poll() is None:
        proc.kill()
        proc.wait()


def _torchrun_failures(text: str) -> list[tuple[int, int]]:
    """(rank, exit code) of every failure in torchrun's error summary."""
    return [
        (int(r), int(c)) for r, c in re.findall(r"rank\s*:\s*(\d+)[^\n]*\n\s*exitcode\s*:\s*(-?\d+)", text)
    ]


def diagnose(workdir: Path, returncode: int, output_dir: str) -> tuple[str, str]:
    """(message, details) for a failed launch: the rank that died without a Python error (killed, exited
    hard) if any, else the earliest rank error; details hold torchrun's and every rank's last lines."""
    errors = [json.loads(p.read_text(encoding="utf-8")) for p in sorted(workdir.glob("rank*.error.json"))]
    torchrun_log = _tail(workdir / "torchrun.log", 200)
    erred = {e["rank"] for e in errors}
    resume = f"resume from the last checkpoint with resume_from / --resume {output_dir}"
    hard = [(r, c) for r, c in _torchrun_failures(torchrun_log) if r not in erred and c != -signal.SIGTERM]
    details = [
        f"torchrun exit status {returncode}",
        "--- torchrun (last lines) ---",
        _tail(workdir / "torchrun.log"),
    ]
    for log in sorted(workdir.glob("rank*.log")):
        details += [f"--- {log.stem} (last lines) ---", _tail(log)]
    if hard:
        rank, code = hard[0]
        how = f"was killed by signal {-code}" if code < 0 else f"exited with status {code}"
        message = (
            f"distributed training failed: rank {rank} {how} without a Python error (torchrun exit status "
            f"{returncode}); {resume}. Last lines of rank {rank}:\n{_tail(workdir / f'rank{rank}.log', 10) or '(none)'}"
        )
        return message, "\n".join(details)
    if errors:
        first = min(errors, key=lambda e: e["time"])
        if first["user_error"]:
            message = first["message"]
        else:
            message = f"distributed training failed on rank {first['rank']}: {first['message']}; {resume}"
            if "timed out" in first["message"].lower() or "timeout" in first["message"].lower():
                message += (
                    " (another rank stopped responding for training.collective_timeout_s; see its log in "
                    f"{workdir})"
                )
        return message, first["traceback"] + "\n" + "\n".join(details)
    message = (
        f"distributed training failed: torchrun exited with status {returncode} before any rank reported; "
        f"{resume}. Last lines of torchrun:\n{_tail(workdir / 'torchrun.log', 10)}"
    )
    return message, "\n".join(details)


def _command(
    n: int, workdir: Path, resume_from: str | Path | None, node: NodeSpec | None = None
) -> list[str]:
    # If this process is killed outright (SIGKILL: no finally runs), torchrun gets SIGTERM from the kernel
    # (util-linux setpriv --pdeathsig, where available) and takes its ranks down; each rank in turn dies
    # with torchrun (trainer/distributed/rank_main.py), so nothing is left behind.
    guard = [setpriv, "--pdeathsig", "TERM", "--"] if (setpriv := shutil.which("setpriv")) else []
    cmd = [
        *guard,
        sys.executable,
        "-m",
        "torch.distributed.run",
        *(["--standalone"] if node is None else node.torchrun_args()),
        f"--nproc-per-node={n}",
        "--max-restarts=0",
        "--monitor-interval=0.2",
        "-m",
        "trainer.distributed.rank_main",
        "--workdir",
        str(workdir),
    ]
    return cmd + (["--resume", str(resume_from)] if resume_from is not None else [])


def launch(
    config: ExperimentConfig,
    sink: EventSink,
    should_stop: Callable[[], bool],
    resume_from: str | Path | None,
    log: Callable[[str], None],
    node: NodeSpec | None = None,
) -> TrainResult:
    """Run ``config`` on ``training.num_processes`` ranks (on this node of ``node``'s run) and relay their
    events to ``sink``; see the module docstring. Returns like ``train``; a failed rank is reported to
    ``sink.on_error`` and raised."""
    n = config.training.num_processes
    _check_devices(config.model.device, n)
    workdir = Path(config.checkpoint.output_dir).resolve() / "distributed"
    if node is not None:
        workdir = workdir / node.workdir_name()
    shutil.rmtree(workdir, ignore_errors=True)
    workdir.mkdir(parents=True)
    (workdir / "config.json").write_text(json.dumps(config.model_dump(mode="json")), encoding="utf-8")
    repo_root = str(Path(__file__).resolve().parent.parent)
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join(filter(None, [repo_root, os.environ.get("PYTHONPATH")])),
    }
    env.setdefault("OMP_NUM_THREADS", "1")
    env.pop("RLVR_DIST_RANK", None)
    resume = None if resume_from is None else Path(resume_from).resolve()
    if node is None:
        log(f"launching {n} data-parallel processes (torchrun); logs in {workdir}")
    else:
        role = "hosting" if node.is_host else "joining"
        log(
            f"node {node.name}: launching {n} data-parallel process(es) (torchrun), {role} the rendezvous of "
            f"{node.num_nodes} nodes at {node.endpoint}; logs in {workdir}"
        )
    with open(workdir / "torchrun.log", "wb") as out:
        proc = subprocess.Popen(
            _command(n, workdir, resume, node),
            stdout=out,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            env=env,
            start_new_session=True,
        )
    reader = _EventReader(workdir / EVENTS_FILE)
    result: dict[str, Any] | None = None
    stop_sent = False
    try:
        while True:
            returncode = proc.poll()
            for event in reader.read():  # after exit: one last read catches the final events
                result = _forward(event, sink, log) or result
            if returncode is not None:
                break
            if not stop_sent and should_stop():
                (workdir / STOP_FILE).touch()
                stop_sent = True
                log("cancel requested: the ranks stop and save at the next step boundary")
            time.sleep(POLL_S)
    finally:
        _kill_group(proc)
    if returncode == 0 and result is not None:
        return TrainResult(
            status=result["status"],
            steps_done=result["steps_done"],
            final_metrics=result["metrics"],
            output_dir=config.checkpoint.output_dir,
        )
    message, details = diagnose(workdir, returncode, config.checkpoint.output_dir)
    if (
        node is not None
        and timed_out_joining(workdir / "torchrun.log")
        and not list(workdir.glob("rank*.log"))
    ):
        message = join_failure_message(node, config.checkpoint.output_dir)
    elif node is not None:
        message = f"node {node.name}: {message}"
    sink.on_error(message, details)
    raise DistributedRunError(message)


def _check_devices(device_name: str, n: int) -> None:
    """On GPUs each process needs its own device (NCCL refuses two ranks on one GPU)."""
    import torch

    from trainer.models.device import resolve_device

    if resolve_device(device_name).type != "cpu" and torch.accelerator.device_count() < n:
        raise ConfigError(
            f"training.num_processes is {n} but only {torch.accelerator.device_count()} GPU(s) are visible: "
            "use at most one process per GPU, or model.device 'cpu'"
        )


def _forward(event: dict[str, Any], sink: EventSink, log: Callable[[str], None]) -> dict[str, Any] | None:
    kind = event["event"]
    if kind == "phase":  # rank 0 building a built-in model before step 1
        sink.on_phase(PhaseReport(**event["phase"]))
    elif kind == "start":
        sink.on_start(run_info_from_json(event["info"]))
    elif kind == "step":
        sink.on_step(step_report_from_json(event["report"]))
    elif kind == "checkpoint":
        sink.on_checkpoint(event["step"], event["path"])
    elif kind == "end":
        sink.on_end(event["status"], event["metrics"])
    elif kind == "warning":  # e.g. the reward-hacking watch (trainer/rewards/hacking.py)
        listener = warning_listener(sink)
        if listener is not None:
            listener(event["step"], event["kind"], event["message"])
    elif kind == "log":
        log(event["message"])
    elif kind == "result":
        return event
    return None
