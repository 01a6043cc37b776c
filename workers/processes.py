"""Child processes from inside a Celery prefork worker (the pool every queue of ours runs on).

Celery's prefork children are daemonic, and billiard installs its own process object as multiprocessing's
current process. The standard library then refuses to start children ("daemonic processes are not allowed to
have children") and cannot pickle billiard's authkey for the forkserver. The verifiers that score in their own
process pool under a hard timeout (math, numeric, code: trainer/verifiers/timeout_pool.py) would return an
error for every completion: a training run, an evaluation or a verification job on a worker would see reward 0
everywhere. So every pool child, as it starts, is allowed to have children (``worker_process_init``); the
verifier processes are themselves daemonic and are stopped by their pool's exit hook.
"""

from __future__ import annotations

import multiprocessing
from multiprocessing.process import AuthenticationString  # type: ignore[attr-defined]  # not in typeshed
from typing import Any

from celery.signals import worker_process_init


def allow_child_processes() -> None:
    """Let this process start multiprocessing children: not daemonic, with a standard authkey. Outside a
    daemonic (billiard) child this changes nothing."""
    config: dict[str, Any] | None = getattr(multiprocessing.current_process(), "_config", None)
    if not config or not config.get("daemon"):
        return
    config["daemon"] = False
    if config.get("authkey") is not None:
        config["authkey"] = AuthenticationString(bytes(config["authkey"]))


@worker_process_init.connect
def _on_pool_process_start(**kwargs: Any) -> None:
    allow_child_processes()
