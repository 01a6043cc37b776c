"""One rank of a data-parallel run: ``python -m torch.distributed.run ... -m trainer.distributed.rank_main --workdir DIR``.

Started by trainer/distributed/launch.py, never by hand. The work directory holds the run's ``config.json``;
this process writes its output to ``rank<N>.log``, rank 0 writes the run's events to ``events.jsonl``,
a ``STOP`` file there asks for a cancel at the next step boundary, and a rank that fails writes
``rank<N>.error.json`` (time, message, traceback) before exiting with status 1.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import signal
import sys
import time
import traceback
from pathlib import Path


def _die_with_parent() -> None:
    """Linux: get SIGKILL when torchrun's agent dies, so a killed launcher leaves no rank behind."""
    if not sys.platform.startswith("linux"):
        return
    import ctypes

    pr_set_pdeathsig = 1
    with contextlib.suppress(OSError):
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(pr_set_pdeathsig, signal.SIGKILL)


def _redirect_output(path: Path) -> None:
    """Send this process's stdout and stderr (file descriptors 1 and 2, so C-level output too) to ``path``."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    sys.stdout.flush()
    sys.stderr.flush()
    os.dup2(fd, 1)
    os.dup2(fd, 2)
    os.close(fd)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="trainer.distributed.rank_main")
    parser.add_argument("--workdir", required=True)
    parser.add_argument("--resume", default=None)
    args = parser.parse_args(argv)
    work = Path(args.workdir)
    rank = int(os.environ.get("RANK", "0"))
    _redirect_output(work / f"rank{rank}.log")
    _die_with_parent()
    os.environ["RLVR_DIST_RANK"] = str(
        rank
    )  # trainer.distributed.context.in_rank(): train() trains, not launches

    try:
        import torch

        from trainer.config import config_from_dict
        from trainer.distributed.context import STOP_FILE, EventFileSink, init_process_group
        from trainer.models.device import resolve_device
        from trainer.sinks import NullSink
        from trainer.step.loop import train

        torch.set_num_threads(max(1, int(os.environ.get("OMP_NUM_THREADS", "1"))))
        config = config_from_dict(
            json.loads((work / "config.json").read_text(encoding="utf-8")), source="config.json"
        )
        ctx = init_process_group(
            resolve_device(config.model.device).type, config.training.collective_timeout_s
        )
        stop_file = work / STOP_FILE
        if ctx.is_main:
            sink = EventFileSink(work)
            result = train(config, sink, lambda: stop_file.exists(), resume_from=args.resume, log=sink.log)
            sink.on_result(result.status, result.steps_done, result.final_metrics)
        else:
            result = train(config, NullSink(), lambda: False, resume_from=args.resume, log=lambda msg: None)
            if (
                os.environ.get("LOCAL_RANK") == "0"
            ):  # another node's first rank: its launcher's outcome (num_nodes > 1)
                EventFileSink(work).on_result(result.status, result.steps_done, result.final_metrics)
        import torch.distributed as dist

        dist.destroy_process_group()
    except BaseException as err:
        from trainer.errors import RLVRError

        user_error = isinstance(err, RLVRError)
        record = {
            "rank": rank,
            "time": time.time(),
            "message": str(err) if user_error else f"{type(err).__name__}: {err}",
            "user_error": user_error,
            "traceback": traceback.format_exc(),
        }
        (work / f"rank{rank}.error.json").write_text(json.dumps(record), encoding="utf-8")
        traceback.print_exc()
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
