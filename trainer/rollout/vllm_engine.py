"""The ``vllm`` rollout engine: generation through vLLM's offline ``LLM`` API, colocated with the trainer.

vLLM needs a CUDA GPU and is an optional extra (``pip install 'rlvr-studio[vllm]'``); nothing here imports
it at module scope, and everything that is ours (turning vLLM's outputs into a ``RolloutBatch``, grouping
repeated prompts into one request with ``n`` samples, naming weights for the push) is plain Python that is
unit-tested without vLLM.

How it differs from the ``hf`` engine, on purpose:

- vLLM samples; the *policy* then scores the sampled tokens in one no-grad forward pass, so
  ``RolloutBatch.logprobs`` and ``entropies`` are the same quantities the ``hf`` engine records (the
  temperature-scaled full-vocabulary distribution the loss trains, and its entropy, which vLLM cannot
  return). vLLM's own sampled-token logprobs (``logprobs_mode='processed_logprobs'``) are kept to measure
  the sampler/trainer mismatch, reported as ``rollout/sampler_logprob_gap`` in ``last_stats``.
- Weights are pushed into the colocated vLLM model after every optimizer step (``sync_weights``), the
  way TRL's colocate mode does it; LoRA adapters are merged on the fly for the push (trainer.models.lora).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import torch
from torch import Tensor
from transformers import PreTrainedModel, PreTrainedTokenizerBase

from trainer.errors import ConfigError
from trainer.models.logprobs import completion_logprobs
from trainer.rollout.base import RolloutBatch, SamplingParams

VLLM_MISSING = (
    "rollout.engine is 'vllm' but the vllm package is not installed. vLLM needs a CUDA GPU: on a GPU host "
    "run `pip install 'rlvr-studio[vllm]'` (the worker-gpu image in docker-compose.yml has it), or set "
    "rollout.engine: hf"
)


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


def _finish_reason(raw: str | None) -> str:
    if raw == "length":
        return "length"
    if raw == "stop":
        return "eos"
    raise RuntimeError(f"vLLM ended a completion with finish_reason {raw!r} (expected 'stop' or 'length')")


def outputs_to_rows(outputs: Sequence[_RequestLike], requests: Sequence[PromptRequest]) -> list[GeneratedRow]:
    """Flatten vLLM's per-request outputs into one row per completion, in prompt order."""
    if len(outputs) != len(requests):
        raise RuntimeError(f"vLLM returned {len(outputs)} request outputs for {len(requests)} requests")
    rows: list[GeneratedRow] = []
    for request, out in zip(requests, outputs, strict=True):
        if len(out.outputs) != request.n:
            raise RuntimeError(f"vLLM returned {len(out.outputs)} completions for a request with n={request.n}")
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
            rows.append(GeneratedRow(prompt_ids, ids, sampled, _finish_reason(completion.finish_reason)))
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


def vllm_weight_name(name: str) -> str:
    """A trainer parameter name as vLLM's ``load_weights`` expects it (the Hugging Face checkpoint name).

    Strips wrappers that are not part of the checkpoint: torch.compile's ``_orig_mod.``, DDP's
    ``module.``, activation checkpointing's ``_checkpoint_wrapped_module.`` and peft's ``base_layer.``.
    """
    for prefix in ("_orig_mod.", "module."):
        if name.startswith(prefix):
            name = name[len(prefix) :]
    return name.replace("_checkpoint_wrapped_module.", "").replace(".base_layer.", ".")


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
    """Samples with a colocated ``vllm.LLM``; the policy scores the samples (see the module docstring)."""

    def __init__(
        self,
        model: PreTrainedModel,
        tokenizer: PreTrainedTokenizerBase,
        model_path: str,
        *,
        dtype: str,
        seed: int,
        gpu_memory_utilization: float,
        max_model_len: int | None,
        scoring_batch_size: int,
    ) -> None:
        try:
            import vllm
        except ImportError:
            raise ConfigError(VLLM_MISSING) from None
        self.model = model
        self.tokenizer = tokenizer
        if tokenizer.pad_token_id is None:
            tokenizer.pad_token = tokenizer.eos_token
        self.pad_id = int(tokenizer.pad_token_id)  # type: ignore[arg-type]
        self.scoring_batch_size = scoring_batch_size
        self._vllm = vllm
        self.llm = vllm.LLM(
            model=model_path,
            dtype=dtype,
            seed=seed,
            gpu_memory_utilization=gpu_memory_utilization,
            max_model_len=max_model_len,
            enable_prefix_caching=True,  # G samples of a prompt share its KV cache
            logprobs_mode="processed_logprobs",  # temperature applied, as the trainer's logprobs are
        )
        self.last_stats: dict[str, float] = {}

    @property
    def device(self) -> torch.device:
        return next(self.model.parameters()).device

    def generate(self, prompts: list[str], params: SamplingParams, generator: torch.Generator) -> RolloutBatch:
        requests = group_requests(prompts)
        seed = sampling_seed(generator)
        token_prompts = [
            {"prompt_token_ids": self.tokenizer(r.prompt, add_special_tokens=False)["input_ids"]} for r in requests
        ]
        sampling = [
            self._vllm.SamplingParams(**to_vllm_sampling_kwargs(params, r.n, seed + i)) for i, r in enumerate(requests)
        ]
        outputs = self.llm.generate(token_prompts, sampling_params=sampling, use_tqdm=False)
        batch, sampler_logprobs = rows_to_batch(outputs_to_rows(outputs, requests), self.pad_id, self.tokenizer, self.device)
        self._score_with_policy(batch, params.temperature)
        mask = batch.completion_mask.bool() & ~torch.isnan(sampler_logprobs)
        gap = (batch.logprobs - sampler_logprobs).abs()[mask]
        self.last_stats = {"rollout/sampler_logprob_gap": float(gap.mean()) if gap.numel() else 0.0}
        return batch

    @torch.no_grad()
    def _score_with_policy(self, batch: RolloutBatch, temperature: float) -> None:
        was_training = self.model.training
        self.model.eval()
        try:
            for start in range(0, len(batch), self.scoring_batch_size):
                rows = slice(start, start + self.scoring_batch_size)
                logp, entropy = completion_logprobs(
                    self.model, batch.prompt_ids[rows], batch.prompt_mask[rows],
                    batch.completion_ids[rows], batch.completion_mask[rows], temperature,
                )
                mask = batch.completion_mask[rows].to(logp.dtype)
                batch.logprobs[rows] = logp * mask
                batch.entropies[rows] = entropy * mask
        finally:
            self.model.train(was_training)

    def sync_weights(self, weights: Iterable[tuple[str, Tensor]]) -> int:
        """Push (name, tensor) pairs into the colocated vLLM model; returns how many were pushed."""
        target = self.llm.llm_engine.model_executor.driver_worker.model_runner.model
        count = 0
        for name, tensor in weights:
            target.load_weights([(vllm_weight_name(name), tensor)])
            count += 1
        self.llm.reset_prefix_cache()  # cached prefixes were computed with the old weights
        return count


def named_weights(model: torch.nn.Module) -> Iterator[tuple[str, Tensor]]:
    """The policy's weights under checkpoint names (plain models; LoRA models go through trainer.models.lora)."""
    for name, param in model.named_parameters():
        yield name, param.detach()
