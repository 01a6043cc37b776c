"""The ``vllm`` rollout engine: vLLM samples, in this process or in a rollout server (trainer/rollout/vllm_backends.py).

Everything here is ours and plain Python, unit-tested without vLLM: grouping repeated prompts into one
request with ``n`` samples, turning vLLM's outputs into a ``RolloutBatch``, naming weights for the push.

How it differs from the ``hf`` engine, on purpose:

- vLLM samples; its sampled-token logprobs (``logprobs_mode='processed_logprobs'``: temperature applied, as
  the trainer's are) go into ``RolloutBatch.sampler_logprobs``. The trainer then scores the sampled tokens
  with the policy (trainer/step/policy_scoring.py), which gives the same ``logprobs`` and ``entropies`` the
  ``hf`` engine records (vLLM cannot return entropies), and corrects the sampler/trainer difference with
  truncated importance weights (training.importance_cap).
- After every optimizer step the policy's weights (LoRA merged) are written as a safetensors file under the
  run's directory and vLLM reloads them in place (``reload_weights``, vLLM's supported API; the V1 engine
  has no reachable model object to copy tensors into).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import torch
from torch import Tensor
from transformers import PreTrainedTokenizerBase

from trainer.rollout.base import RolloutBatch, SamplingParams
from trainer.rollout.weight_files import WeightFiles

# -- the shape of vLLM's outputs that we read (RequestOutput / CompletionOutput / Logprob) --------------


class _LogprobLike(Protocol):
    logprob: float


class _CompletionLike(Protocol):
    token_ids: Sequence[int]
    logprobs: Sequence[dict[int, _LogprobLike]] | None
    finish_reason: str | None


class _RequestLike(Protocol):
    prompt_token_ids: Sequence[int] | None
    outputs: Sequence[_CompletionLike]


@dataclass
class GeneratedRow:
    """One completion as vLLM returned it, before padding into tensors."""

    prompt_ids: list[int]
    completion_ids: list[int]
    sampler_logprobs: list[float]  # vLLM's logprob of each sampled token (NaN when it gave none)
    finish_reason: str  # "eos" | "length"


class VLLMBackend(Protocol):
    """Where vLLM runs (trainer/rollout/vllm_backends.py): prompts as token ids with one sampling request each
    -> one row per completion, in request order; new weights from a weight-file directory."""

    def generate(
        self, prompt_ids: Sequence[list[int]], sampling: Sequence[dict[str, Any]]
    ) -> list[GeneratedRow]: ...

    def load_weights(self, directory: Path) -> None: ...

    def close(self) -> None: ...


@dataclass(frozen=True)
class PromptRequest:
    """A run of identical consecutive prompts becomes one vLLM request with ``n`` samples."""

    prompt: str
    n: int


def group_requests(prompts: Sequence[str]) -> list[PromptRequest]:
    """Collapse consecutive repeats (GRPO's G copies of each prompt) into requests with ``n`` samples.

    Only *consecutive* repeats merge, so the output rows come back in exactly the order of ``prompts``.
    """
    requests: list[PromptRequest] = []
    for prompt in prompts:
        if requests and requests[-1].prompt == prompt:
            requests[-1] = PromptRequest(prompt, requests[-1].n + 1)
        else:
            requests.append(PromptRequest(prompt, 1))
    return requests


def _finish_reason(raw: str | None, stop_reason: object = None) -> str:
    """vLLM's finish reason as the engine's: "length", "eos", or "stop" when one of the request's stop strings
    ended it (vLLM says "stop" for both and names the matched string in ``stop_reason``)."""
    if raw == "length":
        return "length"
    if raw == "stop":
        return "stop" if isinstance(stop_reason, str) else "eos"
    raise RuntimeError(f"vLLM ended a completion with finish_reason {raw!r} (expected 'stop' or 'length')")


def outputs_to_rows(outputs: Sequence[_RequestLike], requests: Sequence[PromptRequest]) -> list[GeneratedRow]:
    """Flatten vLLM's per-request outputs into one row per completion, in prompt order."""
    if len(outputs) != len(requests):
        raise RuntimeError(f"vLLM returned {len(outputs)} request outputs for {len(requests)} requests")
    rows: list[GeneratedRow] = []
    for request, out in zip(requests, outputs, strict=True):
        if len(out.outputs) != request.n:
            raise RuntimeError(
                f"vLLM returned {len(out.outputs)} completions for a request with n={request.n}"
            )
        prompt_ids = list(out.prompt_token_ids or [])
        for completion in out.outputs:
            ids = list(completion.token_ids)
            if completion.logprobs is None:
                sampled = [math.nan] * len(ids)
            else:
                sampled = [
                    float(step[tok].logprob) if tok in step else math.nan
                    for tok, step in zip(ids, completion.logprobs, strict=True)
                ]
            rows.append(
                GeneratedRow(
                    prompt_ids,
                    ids,
                    sampled,
                    _finish_reason(completion.finish_reason, getattr(completion, "stop_reason", None)),
                )
            )
    return rows


def rows_to_batch(
    rows: Sequence[GeneratedRow], pad_id: int, tokenizer: PreTrainedTokenizerBase, device: torch.device
) -> tuple[RolloutBatch, Tensor]:
    """Pad rows into a ``RolloutBatch`` (prompts left-padded, completions right-padded).

    Returns the batch with zero logprobs/entropies (the policy fills them) and vLLM's sampled-token
    logprobs [N, T] (NaN where absent, 0 on padding).
    """
    if not rows:
        raise ValueError("no completions to pad")
    n = len(rows)
    lp = max(len(r.prompt_ids) for r in rows)
    t = max(max(len(r.completion_ids) for r in rows), 1)
    prompt_ids = torch.full((n, lp), pad_id, dtype=torch.long)
    prompt_mask = torch.zeros((n, lp), dtype=torch.long)
    completion_ids = torch.full((n, t), pad_id, dtype=torch.long)
    completion_mask = torch.zeros((n, t), dtype=torch.long)
    sampler_logprobs = torch.zeros((n, t), dtype=torch.float32)
    for i, row in enumerate(rows):
        k, m = len(row.prompt_ids), len(row.completion_ids)
        if k:
            prompt_ids[i, lp - k :] = torch.tensor(row.prompt_ids)
            prompt_mask[i, lp - k :] = 1
        if m:
            completion_ids[i, :m] = torch.tensor(row.completion_ids)
            completion_mask[i, :m] = 1
            sampler_logprobs[i, :m] = torch.tensor(row.sampler_logprobs, dtype=torch.float32)
    texts = tokenizer.batch_decode([r.completion_ids for r in rows], skip_special_tokens=True)
    batch = RolloutBatch(
        prompt_ids=prompt_ids.to(device),
        prompt_mask=prompt_mask.to(device),
        completion_ids=completion_ids.to(device),
        completion_mask=completion_mask.to(device),
        logprobs=torch.zeros((n, t), device=device),
        entropies=torch.zeros((n, t), device=device),
        finish_reasons=[r.finish_reason for r in rows],
        texts=list(texts),
    )
    return batch, sampler_logprobs.to(device)


def sampling_seed(generator: torch.Generator) -> int:
    """A per-call vLLM seed drawn from the run's generator, so a seeded run samples reproducibly."""
    return int(torch.randint(0, 2**31 - 1, (1,), generator=generator).item())


def to_vllm_sampling_kwargs(params: SamplingParams, n: int, seed: int) -> dict[str, Any]:
    """Our SamplingParams -> keyword arguments of ``vllm.SamplingParams`` for one request."""
    return {
        "n": n,
        "temperature": params.temperature,
        "top_p": params.top_p,
        "top_k": params.top_k if params.top_k > 0 else -1,  # vLLM: -1 disables top-k
        "max_tokens": params.max_new_tokens,
        "logprobs": 0,  # the sampled token's logprob only
        "seed": seed,
        "skip_special_tokens": True,
    }


class VLLMRolloutEngine:
    """Samples with vLLM through a backend (colocated or a rollout server); see the module docstring."""

    def __init__(self, tokenizer: PreTrainedTokenizerBase, backend: VLLMBackend, weights_root: Path) -> None:
        self.tokenizer = tokenizer
        if tokenizer.pad_token_id is None:
            tokenizer.pad_token = tokenizer.eos_token
        self.pad_id = int(tokenizer.pad_token_id)  # type: ignore[arg-type]
        self.backend = backend
        self.weights = WeightFiles(weights_root)
        self.device = torch.device("cpu")  # the batch is moved to the trainer's device by the caller
        self.weights_version = 0  # the policy version vLLM holds (0: the initial checkpoint)

    def generate(
        self, prompts: list[str], params: SamplingParams, generator: torch.Generator
    ) -> RolloutBatch:
        requests = group_requests(prompts)
        seed = sampling_seed(generator)
        prompt_ids = [self.tokenizer(r.prompt, add_special_tokens=False)["input_ids"] for r in requests]
        sampling = [to_vllm_sampling_kwargs(params, r.n, seed + i) for i, r in enumerate(requests)]
        rows = self.backend.generate(prompt_ids, sampling)
        expected = sum(r.n for r in requests)
        if len(rows) != expected:
            raise RuntimeError(f"vLLM returned {len(rows)} completions for {expected} requested")
        return self._batch(rows)

    def _batch(self, rows: list[GeneratedRow]) -> RolloutBatch:
        batch, sampler_logprobs = rows_to_batch(rows, self.pad_id, self.tokenizer, self.device)
        batch.sampler_logprobs = sampler_logprobs
        batch.logprobs = torch.nan_to_num(sampler_logprobs, nan=0.0)  # until the policy rescores them
        return batch

    def generate_from_ids(
        self,
        contexts: list[list[int]],
        params: SamplingParams,
        generator: torch.Generator,
        stop: Sequence[str] = (),
    ) -> RolloutBatch:
        """Continue each context (token ids, sent as they are: never re-tokenised) by one sampled completion; a
        completion also ends at one of the ``stop`` strings, kept in it (finish reason "stop"). The multi-turn
        driver calls this (trainer/environments/driver.py)."""
        for i, ids in enumerate(contexts):
            if not ids:
                raise ValueError(f"context {i} is empty: give every context at least one token")
        seed = sampling_seed(generator)
        extra = {"stop": list(stop), "include_stop_str_in_output": True} if stop else {}
        sampling = [{**to_vllm_sampling_kwargs(params, 1, seed + i), **extra} for i in range(len(contexts))]
        rows = self.backend.generate([list(ids) for ids in contexts], sampling)
        if len(rows) != len(contexts):
            raise RuntimeError(f"vLLM returned {len(rows)} completions for {len(contexts)} contexts")
        return self._batch(rows)

    def push_weights(self, model: torch.nn.Module, version: int) -> None:
        """Write ``model``'s weights (LoRA merged) as weight-file version ``version`` and have vLLM load them."""
        self.load_version(self.weights.write(model, version))

    def load_version(self, directory: Path) -> None:
        """Have vLLM load the weight files in ``directory`` (written by ``WeightFiles.write``)."""
        self.backend.load_weights(directory)
        self.weights_version = WeightFiles.version_of(directory)

    def close(self) -> None:
        self.backend.close()
