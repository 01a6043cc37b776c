"""Child processes from inside a Celery prefork worker (the pool every queue of ours runs on).

Celery's prefork children are daemonic, and billiard installs its own process object as multiprocessing's
current process. The standard library then refuses to start children ("daemonic processes are not allowed to
have children") and cannot pickle billiard's authkey for the forkserver. The verifiers that score in their own
process pool under a hard timeout (math, numeric, code: trainer/verifiers/timeout_pool.py) would return an
error for every completion: a training run, an evaluation or a verification job on a worker would see reward 0
everywhere. Every task that may score wraps its work in ``verifier_processes_allowed``.
"""

from __future__ import annotations

import contextlib
import multiprocessing
from collections.abc import Iterator
from multiprocessing.process import AuthenticationString  # type: ignore[attr-defined]  # not in typeshed
from typing import Any


@contextlib.contextmanager
def verifier_processes_allowed() -> Iterator[None]:
    """Let the verifiers' timeout pool (trainer/verifiers/timeout_pool.py) start processes in a prefork child.

    Celery's prefork children are daemonic, and billiard installs its own process object as
    multiprocessing's current process. The standard library then refuses to start children ("daemonic
    processes are not allowed to have children") and cannot pickle billiard's authkey for the forkserver,
    so every math, numeric or code verdict of the job would come back as an error. For the length of the
    job the current process counts as non-daemonic with a standard authkey; the pool's processes, once
    started, are stopped by the pool's own exit hook. Outside a daemonic child this changes nothing.
    """
    config: dict[str, Any] | None = getattr(multiprocessing.current_process(), "_config", None)
    if not config or not config.get("daemon"):
        yield
        return
    saved = dict(config)
    config["daemon"] = False
    if config.get("authkey") is not None:
        config["authkey"] = AuthenticationString(bytes(config["authkey"]))
    try:
        yield
    finally:
        config.clear()
        config.update(saved)
