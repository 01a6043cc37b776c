"""Where vLLM runs for the ``vllm`` engine: in this process (``LocalVLLM``, colocated) or in a rollout server
(``RemoteVLLM``, a client of trainer/rollout/rollout_server.py). Both take prompts as token ids with one
sampling request each and return one ``GeneratedRow`` per completion, in request order; both load new
weights from a weight-file directory (trainer/rollout/weight_files.py).

vLLM is imported only when a ``LocalVLLM`` is built. Its V1 engine core runs in this process
(``VLLM_ENABLE_V1_MULTIPROCESSING=0``): a colocated engine then works in a Celery worker (a daemonic process
may not start multiprocessing children) and needs no ``__main__`` guard.
"""

from __future__ import annotations

import os
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import torch

from trainer.errors import ConfigError, RLVRError
from trainer.rollout.vllm_engine import GeneratedRow, PromptRequest, outputs_to_rows

VLLM_MISSING = (
    "rollout.engine is 'vllm' but this environment cannot import vllm. In a checkout, `make install` builds "
    "vLLM's CPU build in its own environment (.venv-vllm): use rollout.vllm_mode 'server', which starts a rollout "
    "server there (or point RLVR_VLLM_PYTHON at an interpreter that has vllm). On a GPU host install "
    "`pip install 'rlvr-studio[vllm]'` (the worker-gpu image in docker-compose.yml has it with RLVR_EXTRAS=vllm), "
    "which also allows 'colocated'. Or set rollout.engine: hf"
)
# Request bodies a rollout server accepts, and the largest reply a client reads (both bound memory).
MAX_BODY_BYTES = 64 * 1024 * 1024


class RolloutServerError(RLVRError):
    """The rollout server refused a request, failed, or could not be reached."""


CPU_KV_CACHE_GB = 1.0


def vllm_engine_args(
    model_path: str,
    *,
    dtype: str,
    seed: int,
    gpu_memory_utilization: float,
    max_model_len: int | None,
    kv_cache_gb: float | None = None,
) -> dict[str, Any]:
    """Keyword arguments of ``vllm.LLM`` for a rollout engine (shared by colocated engines and servers).

    On the CPU the KV cache gets an explicit size (``kv_cache_gb``, default 1 GiB): vLLM's CPU backend counts
    the whole process's memory against the utilization share, which a training process has mostly used."""
    cpu = not torch.cuda.is_available()
    if kv_cache_gb is None and cpu:
        kv_cache_gb = CPU_KV_CACHE_GB
    return {
        "model": model_path,
        "dtype": dtype,
        "seed": seed,
        "gpu_memory_utilization": gpu_memory_utilization,
        "kv_cache_memory_bytes": None if kv_cache_gb is None else int(kv_cache_gb * 2**30),
        "max_model_len": max_model_len,
        "enable_prefix_caching": True,  # the G samples of a prompt share its KV cache
        "logprobs_mode": "processed_logprobs",  # temperature applied, as the trainer's logprobs are
        "enforce_eager": cpu,  # CPU: no torch.compile warm-up (tens of seconds) for models this small
    }


class LocalVLLM:
    """A ``vllm.LLM`` in this process (engine core in-process)."""

    def __init__(self, engine_args: dict[str, Any]) -> None:
        os.environ.setdefault("VLLM_ENABLE_V1_MULTIPROCESSING", "0")
        try:
            import vllm
        except ImportError:
            raise ConfigError(VLLM_MISSING) from None
        self._vllm = vllm
        keep_set_threads = (
            torch.set_num_threads
        )  # vLLM's CPU worker replaces it process-wide; the trainer keeps its own
        try:
            self.llm = vllm.LLM(**engine_args)
        finally:
            torch.set_num_threads = keep_set_threads

    def generate(
        self, prompt_ids: Sequence[list[int]], sampling: Sequence[dict[str, Any]]
    ) -> list[GeneratedRow]:
        prompts = [{"prompt_token_ids": list(ids)} for ids in prompt_ids]
        params = [self._vllm.SamplingParams(**kw) for kw in sampling]
        outputs = self.llm.generate(prompts, sampling_params=params, use_tqdm=False)  # type: ignore[arg-type]
        return outputs_to_rows(outputs, [PromptRequest("", int(kw["n"])) for kw in sampling])  # type: ignore[arg-type]

    def load_weights(self, directory: Path) -> None:
        self.llm.collective_rpc("reload_weights", kwargs={"weights_path": str(directory)})
        self.llm.reset_prefix_cache()  # cached prefixes were computed with the old weights

    def close(self) -> None:
        self.llm = None  # type: ignore[assignment]


class RemoteVLLM:
    """A client of a rollout server (``rlvr rollout-server``)."""

    def __init__(self, url: str, token: str | None, timeout_s: float) -> None:
        import httpx

        self.url = url.rstrip("/")
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        self._client = httpx.Client(base_url=self.url, headers=headers, timeout=timeout_s)

    def _call(self, method: str, path: str, body: dict[str, Any] | None = None) -> dict[str, Any]:
        import httpx

        try:
            response = self._client.request(method, path, json=body)
        except httpx.HTTPError as err:
            raise RolloutServerError(f"rollout server {self.url} did not answer {path}: {err}") from None
        if len(response.content) > MAX_BODY_BYTES:
            raise RolloutServerError(
                f"rollout server {self.url} sent {len(response.content)} bytes for {path}"
            )
        try:
            data = response.json()
        except ValueError:
            data = {}
        if response.status_code != 200:
            message = data.get("message") if isinstance(data, dict) else None  # the API's one error shape
            raise RolloutServerError(
                f"rollout server {self.url} refused {path} ({response.status_code}): {message or response.text[:500]}"
            )
        if not isinstance(data, dict):
            raise RolloutServerError(
                f"rollout server {self.url} sent a reply that is not a JSON object for {path}"
            )
        return data

    def health(self) -> dict[str, Any]:
        return self._call("GET", "/health")

    def wait_until_healthy(self, timeout_s: float, alive: Any = None) -> dict[str, Any]:
        """Poll /health until it answers (``alive()`` False stops early: the server process died)."""
        deadline = time.monotonic() + timeout_s
        while True:
            try:
                return self.health()
            except RolloutServerError:
                if time.monotonic() > deadline or (alive is not None and not alive()):
                    raise
                time.sleep(0.5)

    def generate(
        self, prompt_ids: Sequence[list[int]], sampling: Sequence[dict[str, Any]]
    ) -> list[GeneratedRow]:
        body = {
            "requests": [
                {"prompt_token_ids": list(ids), "sampling": dict(kw)}
                for ids, kw in zip(prompt_ids, sampling, strict=True)
            ]
        }
        rows = self._call("POST", "/generate", body).get("rows")
        if not isinstance(rows, list):
            raise RolloutServerError(f"rollout server {self.url} sent no rows")
        try:
            return [
                GeneratedRow(
                    list(r["prompt_ids"]),
                    list(r["completion_ids"]),
                    [float("nan") if x is None else float(x) for x in r["sampler_logprobs"]],
                    str(r["finish_reason"]),
                )
                for r in rows
            ]
        except (KeyError, TypeError, ValueError) as err:
            raise RolloutServerError(f"rollout server {self.url} sent a malformed row: {err}") from None

    def load_weights(self, directory: Path) -> None:
        self._call("POST", "/weights", {"path": str(directory)})

    def close(self) -> None:
        self._client.close()
