"""A rollout server that a run starts and owns (``rollout.vllm_mode: server`` without ``vllm_server_url``).

The server is ``rlvr rollout-server`` in a child process, run by the interpreter that has vLLM
(``vllm_python``: vLLM's CPU build lives in its own environment, .venv-vllm, beside the project's): it binds a free port on 127.0.0.1 and writes its
URL to a file; this side waits for that and for ``/health``, with a bounded wait that fails with the
server's own last log lines. A fresh random token guards it. The kernel stops the server when the process
that started it dies (``PR_SET_PDEATHSIG``), so a killed worker leaves no engine holding memory behind;
``close()`` stops it on a normal end or a cancel.
"""

from __future__ import annotations

import ctypes
import importlib.util
import os
import re
import secrets
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from trainer.errors import ConfigError
from trainer.rollout.vllm_backends import VLLM_MISSING, RemoteVLLM, RolloutServerError

START_TIMEOUT_S = 600.0  # loading a large checkpoint into vLLM takes minutes
_PR_SET_PDEATHSIG = 1


def vllm_python() -> str:
    """The interpreter whose environment has vLLM: ``RLVR_VLLM_PYTHON`` (set by whoever deploys the workers),
    else this one when it can import vllm (a GPU image), else the checkout's ``.venv-vllm`` (`make install`)."""
    explicit = os.environ.get("RLVR_VLLM_PYTHON")
    if explicit:
        return explicit
    if importlib.util.find_spec("vllm") is not None:
        return sys.executable
    local = Path(__file__).resolve().parents[2] / ".venv-vllm" / "bin" / "python"
    if local.exists():
        return str(local)
    raise ConfigError(VLLM_MISSING)


def parse_cpus(spec: str) -> set[int]:
    """'1', '0,2' or '4-7' -> CPU numbers (a rollout server's --cpus)."""
    cpus: set[int] = set()
    for part in spec.split(","):
        m = re.fullmatch(r"\s*(\d{1,5})(?:-(\d{1,5}))?\s*", part)
        if m is None:
            raise ConfigError(f"CPU list {spec!r} is not like 1, 0,2 or 4-7")
        cpus.update(range(int(m.group(1)), int(m.group(2) or m.group(1)) + 1))
    if not cpus or len(cpus) > 4096:
        raise ConfigError(f"CPU list {spec!r} names no CPU, or too many")
    return cpus


def _die_with_parent() -> None:  # runs in the child between fork and exec
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(_PR_SET_PDEATHSIG, signal.SIGTERM)


def _tail(path: Path, lines: int = 25) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return "(no log)"


class OwnedRolloutServer:
    """Start ``rlvr rollout-server`` for ``model_path`` and connect a ``RemoteVLLM`` client to it."""

    def __init__(
        self,
        engine_args: dict[str, Any],
        weights_root: Path,
        run_dir: Path,
        request_timeout_s: float,
        start_timeout_s: float = START_TIMEOUT_S,
    ) -> None:
        run_dir.mkdir(parents=True, exist_ok=True)
        self.log_path = run_dir / "rollout-server.log"
        ready = run_dir / ".rollout-server-url"
        ready.unlink(missing_ok=True)
        token = secrets.token_urlsafe(32)
        cmd = [
            vllm_python(),
            "-m",
            "trainer.cli",
            "rollout-server",
            "--model",
            engine_args["model"],
            "--dtype",
            engine_args["dtype"],
            "--seed",
            str(engine_args["seed"]),
            "--gpu-memory-utilization",
            str(engine_args["gpu_memory_utilization"]),
            "--weights-root",
            str(weights_root),
            "--port",
            "0",
            "--ready-file",
            str(ready),
        ]
        cpus = os.environ.get("RLVR_ROLLOUT_SERVER_CPUS")
        if cpus:  # a CPU host: generation on its own cores, apart from training (as on its own GPU)
            parse_cpus(cpus)
            cmd += ["--cpus", cpus]
        if engine_args.get("kv_cache_memory_bytes"):
            cmd += ["--kv-cache-gb", str(engine_args["kv_cache_memory_bytes"] / 2**30)]
        if engine_args.get("max_model_len"):
            cmd += ["--max-model-len", str(engine_args["max_model_len"])]
        env = {**os.environ, "RLVR_ROLLOUT_TOKEN": token}
        with self.log_path.open("ab") as log:
            self.process = subprocess.Popen(
                cmd,
                stdout=log,
                stderr=subprocess.STDOUT,
                env=env,
                preexec_fn=_die_with_parent,
                start_new_session=True,
            )
        deadline = time.monotonic() + start_timeout_s
        while not ready.exists():
            if self.process.poll() is not None:
                raise RolloutServerError(
                    f"the rollout server exited with status {self.process.returncode} before serving; its log "
                    f"({self.log_path}) ends:\n{_tail(self.log_path)}"
                )
            if time.monotonic() > deadline:
                self.close()
                raise RolloutServerError(
                    f"the rollout server did not start within {start_timeout_s:.0f} s; its log ends:\n{_tail(self.log_path)}"
                )
            time.sleep(0.2)
        self.url = ready.read_text().strip()
        self.client = RemoteVLLM(self.url, token, request_timeout_s)
        self.client.wait_until_healthy(30.0, alive=lambda: self.process.poll() is None)

    def generate(self, prompt_ids: Any, sampling: Any) -> Any:
        self._check_alive()
        return self.client.generate(prompt_ids, sampling)

    def load_weights(self, directory: Path) -> None:
        self._check_alive()
        self.client.load_weights(directory)

    def _check_alive(self) -> None:
        if self.process.poll() is not None:
            raise RolloutServerError(
                f"the rollout server exited with status {self.process.returncode}; its log ({self.log_path}) "
                f"ends:\n{_tail(self.log_path)}"
            )

    def close(self) -> None:
        if getattr(self, "client", None) is not None:
            self.client.close()
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
