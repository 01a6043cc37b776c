"""``rlvr rollout-server``: a process that owns a vLLM engine and serves generation to training runs.

HTTP with JSON bodies, errors in the platform's one shape (``{"message": ..., "extra": {...}}``):

- ``GET /health``: ``{"status": "ok", "model", "weights", "weights_loaded", "requests_served", "uptime_s"}``,
  answered even while a generation runs;
- ``POST /generate``: ``{"requests": [{"prompt_token_ids": [...], "sampling": {n, temperature, ...}}]}`` ->
  ``{"rows": [{"prompt_ids", "completion_ids", "sampler_logprobs", "finish_reason"}]}``, one row per
  completion in request order;
- ``POST /weights``: ``{"path": DIR}``: reload the policy's weights from a weight-file directory
  (trainer/rollout/weight_files.py), which must lie under the server's ``--weights-root``.

Every request but /health needs ``Authorization: Bearer <token>`` when the server has a token (the
``RLVR_ROLLOUT_TOKEN`` environment variable; a run that starts its own server always sets one). It listens on
127.0.0.1 unless told otherwise. Bodies are bounded (64 MiB) and every field is validated before vLLM sees
it. One generation or weight load runs at a time (vLLM's engine is not shared between threads).
"""

from __future__ import annotations

import hmac
import json
import os
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import Field, ValidationError

from trainer.bounds import BoundedModel
from trainer.rollout.vllm_backends import MAX_BODY_BYTES, LocalVLLM
from trainer.rollout.weight_files import WEIGHTS_FILE, WeightFiles

MAX_REQUESTS = 65_536
MAX_PROMPT_TOKENS = 1_048_576


class ServerSampling(BoundedModel):
    """One request's sampling parameters (the subset of vllm.SamplingParams the engine sends)."""

    n: int = Field(ge=1, le=1024)
    temperature: float = Field(gt=0, le=100)
    top_p: float = Field(gt=0, le=1)
    top_k: int = Field(ge=-1, le=1_000_000)
    max_tokens: int = Field(ge=1, le=131_072)
    logprobs: Literal[0] = 0
    seed: int = Field(ge=0, le=2**63 - 1)
    skip_special_tokens: bool = True
    # multi-turn episodes (trainer/environments/): a turn also ends at these strings, kept in the output
    stop: list[Annotated[str, Field(min_length=1, max_length=64)]] = Field(default_factory=list, max_length=8)
    include_stop_str_in_output: bool = False


class ServerRequest(BoundedModel):
    prompt_token_ids: list[int] = Field(min_length=1, max_length=MAX_PROMPT_TOKENS)
    sampling: ServerSampling


class GenerateBody(BoundedModel):
    requests: list[ServerRequest] = Field(min_length=1, max_length=MAX_REQUESTS)


class WeightsBody(BoundedModel):
    path: str = Field(min_length=1, max_length=4096)


class BadRequest(Exception):
    def __init__(self, status: int, message: str, extra: dict[str, Any] | None = None) -> None:
        super().__init__(message)
        self.status, self.message, self.extra = status, message, extra or {}


class RolloutService:
    """What the HTTP handler calls; holds the engine and the lock that serialises it."""

    def __init__(self, backend: LocalVLLM, model: str, weights_root: Path, token: str | None) -> None:
        self.backend = backend
        self.model = model
        self.weights_root = weights_root.resolve()
        self.token = token
        self.lock = threading.Lock()
        self.started = time.monotonic()
        self.requests_served = 0
        self.weights = "initial checkpoint"
        self.weights_loaded = 0

    def authorized(self, header: str | None) -> bool:
        if not self.token:
            return True
        given = (header or "").removeprefix("Bearer ").strip()
        return hmac.compare_digest(given.encode(), self.token.encode())

    def health(self) -> dict[str, Any]:
        return {
            "status": "ok",
            "model": self.model,
            "weights": self.weights,
            "weights_loaded": self.weights_loaded,
            "requests_served": self.requests_served,
            "uptime_s": round(time.monotonic() - self.started, 1),
        }

    def generate(self, body: dict[str, Any]) -> dict[str, Any]:
        parsed = _parse(GenerateBody, body)
        with self.lock:
            rows = self.backend.generate(
                [r.prompt_token_ids for r in parsed.requests],
                [r.sampling.model_dump() for r in parsed.requests],
            )
            self.requests_served += len(parsed.requests)
        return {
            "rows": [
                {
                    "prompt_ids": r.prompt_ids,
                    "completion_ids": r.completion_ids,
                    "sampler_logprobs": [None if x != x else x for x in r.sampler_logprobs],  # NaN -> null
                    "finish_reason": r.finish_reason,
                }
                for r in rows
            ]
        }

    def load_weights(self, body: dict[str, Any]) -> dict[str, Any]:
        parsed = _parse(WeightsBody, body)
        directory = Path(parsed.path).resolve()
        if not directory.is_relative_to(self.weights_root):
            raise BadRequest(
                403,
                f"weights must lie under this server's --weights-root ({self.weights_root})",
                {"path": parsed.path},
            )
        try:
            WeightFiles.version_of(directory)
        except ValueError as err:
            raise BadRequest(400, str(err), {"path": parsed.path}) from None
        if not (directory / WEIGHTS_FILE).is_file():
            raise BadRequest(404, f"{directory} holds no {WEIGHTS_FILE}", {"path": parsed.path})
        with self.lock:
            self.backend.load_weights(directory)
            self.weights, self.weights_loaded = str(directory), self.weights_loaded + 1
        return {"status": "ok", "weights": self.weights}


def _parse(model: type[BoundedModel], body: dict[str, Any]) -> Any:
    try:
        return model.model_validate(body)
    except ValidationError as err:
        fields = {".".join(str(p) for p in e["loc"]) or "body": e["msg"] for e in err.errors()[:20]}
        raise BadRequest(400, "invalid request body", {"fields": fields}) from None


def make_handler(service: RolloutService) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        server_version = "rlvr-rollout-server"

        def log_message(self, format: str, *args: Any) -> None:
            pass  # one line per request would drown the run's log

        def _reply(self, status: int, data: dict[str, Any]) -> None:
            raw = json.dumps(data).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(raw)))
            self.end_headers()
            self.wfile.write(raw)

        def do_GET(self) -> None:
            if self.path == "/health":
                self._reply(200, service.health())
            else:
                self._reply(404, {"message": f"no endpoint {self.path[:200]}", "extra": {}})

        def do_POST(self) -> None:
            try:
                if not service.authorized(self.headers.get("Authorization")):
                    raise BadRequest(401, "missing or wrong rollout-server token (Authorization: Bearer ...)")
                routes = {"/generate": service.generate, "/weights": service.load_weights}
                if self.path not in routes:
                    raise BadRequest(404, f"no endpoint {self.path[:200]}")
                self._reply(200, routes[self.path](self._body()))
            except BadRequest as err:
                self._reply(err.status, {"message": err.message, "extra": err.extra})
            except Exception as err:  # vLLM failed: say so, keep serving
                self._reply(500, {"message": f"{type(err).__name__}: {err}"[:2000], "extra": {}})

        def _body(self) -> dict[str, Any]:
            try:
                length = int(self.headers.get("Content-Length") or 0)
            except ValueError:
                raise BadRequest(400, "Content-Length is not a number") from None
            if length <= 0:
                raise BadRequest(400, "the request needs a JSON body")
            if length > MAX_BODY_BYTES:
                raise BadRequest(413, f"request body over {MAX_BODY_BYTES} bytes", {"bytes": length})
            try:
                data = json.loads(self.rfile.read(length))
            except ValueError:
                raise BadRequest(400, "the body is not JSON") from None
            if not isinstance(data, dict):
                raise BadRequest(400, "the body must be a JSON object")
            return data

    return Handler


def serve(
    engine_args: dict[str, Any],
    weights_root: Path,
    host: str,
    port: int,
    ready_file: Path | None,
    log: Any = print,
) -> None:
    """Load the model, listen, and write ``http://host:port`` to ``ready_file`` once it serves (port 0:
    any free port, which the file then names). Runs until killed."""
    token = os.environ.get("RLVR_ROLLOUT_TOKEN") or None
    service = RolloutService(LocalVLLM(engine_args), engine_args["model"], weights_root, token)
    httpd = ThreadingHTTPServer((host, port), make_handler(service))
    url = f"http://{host}:{httpd.server_address[1]}"
    if ready_file is not None:
        tmp = ready_file.with_name(ready_file.name + ".tmp")
        tmp.write_text(url)
        tmp.rename(ready_file)
    log(f"rollout server for {engine_args['model']} listening on {url} (weights under {weights_root})")
    httpd.serve_forever()
