"""The ``hf`` rollout engine: batched sampling with transformers models, on CPU or GPU.

A plain KV-cached decoding loop instead of ``model.generate``: it yields the sampled tokens' logprobs and
the policy entropy at every position in the same pass (``generate`` would need ``output_scores`` and a
second pass), prefills each distinct prompt once however many completions it gets, stops as soon as
every sequence has finished, and carries little per-token overhead, which dominates on small models.
Sampling uses an explicit ``torch.Generator``, so a seeded run is reproducible on CPU.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TypeVar

import torch
from torch import Tensor
from transformers import PreTrainedModel, PreTrainedTokenizerBase

from trainer.distributed.fsdp import gathered
from trainer.models.logprobs import prefill
from trainer.models.transformers_compat import cache_kwargs, output_cache
from trainer.rollout.base import RolloutBatch, SamplingParams
from trainer.rollout.cached_decoder import CachedDecoder, decoder_for

_Item = TypeVar("_Item", str, list[int])


def _filter_logits(logits: Tensor, top_k: int, top_p: float) -> Tensor:
    """Mask logits outside the top-k / nucleus set with -inf (sampling only; logprobs use full logits)."""
    if top_k > 0 and top_k < logits.shape[-1]:
        kth = torch.topk(logits, top_k, dim=-1).values[:, -1:]  # [B, 1]
        logits = logits.masked_fill(logits < kth, float("-inf"))
    if top_p < 1.0:
        sorted_logits, order = torch.sort(logits, descending=True, dim=-1)
        cum = torch.softmax(sorted_logits, dim=-1).cumsum(-1)
        drop_sorted = cum - torch.softmax(sorted_logits, dim=-1) >= top_p  # keep the first token always
        drop = torch.zeros_like(drop_sorted).scatter(-1, order, drop_sorted)
        logits = logits.masked_fill(drop, float("-inf"))
    return logits


def _set_training(model: torch.nn.Module, mode: bool) -> None:
    """Dropout off (or back on) for sampling, as ``model.train(mode)`` does, without transformers' override of it:
    that one re-kernelizes the model for the new mode (hub kernels) on every switch, two per step, a few
    milliseconds on a small model each time; the training-mode kernels compute the same forward."""
    torch.nn.Module.train(model, mode)


class _StopStrings:
    """Finds the step at which a completion's decoded text first contains one of the stop strings.

    Every step decodes only the last few tokens of each live completion: a stop string of ``n`` UTF-8 bytes lies
    within the last ``n`` tokens that completed it, since every non-special token decodes to at least one byte.
    """

    def __init__(self, tokenizer: PreTrainedTokenizerBase, stop: Sequence[str]) -> None:
        if any(not s for s in stop):
            raise ValueError("a stop string is empty: give only non-empty stop strings")
        self.tokenizer = tokenizer
        self.stop = tuple(stop)
        self.window = max(len(s.encode("utf-8")) for s in self.stop)

    def completed(self, tokens: list[Tensor], alive: Tensor) -> Tensor:
        """[B] bool: the live rows whose text, up to the newest token of ``tokens`` ([B] per step), holds a stop."""
        hit = torch.zeros_like(alive)
        live = alive.nonzero().flatten().tolist()
        if not live:
            return hit
        tail = torch.stack(tokens[-self.window :], dim=1)[live].tolist()  # [live, <=window]
        texts = self.tokenizer.batch_decode(tail, skip_special_tokens=True)
        for row, text in zip(live, texts, strict=True):
            if any(s in text for s in self.stop):
                hit[row] = True
        return hit


class HFRolloutEngine:
    """Samples completions from a live policy model (the same object the optimizer updates)."""

    def __init__(
        self, model: PreTrainedModel, tokenizer: PreTrainedTokenizerBase, cached_decoder: bool = True
    ) -> None:
        self.model = model
        self.tokenizer = tokenizer
        # decode steps without transformers' forward (cached_decoder.py); None: its forward every step
        self.decoder: CachedDecoder | None = decoder_for(model) if cached_decoder else None
        if tokenizer.pad_token_id is None:
            tokenizer.pad_token = tokenizer.eos_token
        self.pad_id = int(tokenizer.pad_token_id)  # type: ignore[arg-type]
        eos = tokenizer.eos_token_id
        self.eos_ids = set(eos if isinstance(eos, list) else [eos]) if eos is not None else set()
        gen_eos = getattr(getattr(model, "generation_config", None), "eos_token_id", None)
        if gen_eos is not None:
            self.eos_ids |= set(gen_eos if isinstance(gen_eos, list) else [gen_eos])

    @property
    def device(self) -> torch.device:
        return next(self.model.parameters()).device

    def generate(
        self, prompts: list[str], params: SamplingParams, generator: torch.Generator
    ) -> RolloutBatch:
        return self._in_chunks(prompts, params, lambda chunk: self._generate_chunk(chunk, params, generator))

    def generate_from_ids(
        self,
        contexts: list[list[int]],
        params: SamplingParams,
        generator: torch.Generator,
        stop: Sequence[str] = (),
    ) -> RolloutBatch:
        """Continue each context (token ids, used as they are) by one sampled completion.

        ``prompt_ids`` of the result are the contexts, left-padded. A completion also ends at the first token that
        completes one of the ``stop`` strings in its decoded text (finish reason ``"stop"``, that token kept).
        The multi-turn driver calls this (trainer/environments/driver.py): contexts are never re-tokenised.
        """
        for i, ids in enumerate(contexts):
            if not ids:
                raise ValueError(f"context {i} is empty: give every context at least one token")
        stopper = _StopStrings(self.tokenizer, stop) if stop else None
        return self._in_chunks(
            contexts, params, lambda chunk: self._generate_ids_chunk(chunk, params, generator, stopper)
        )

    def _in_chunks(
        self, items: list[_Item], params: SamplingParams, run: Callable[[list[_Item]], RolloutBatch]
    ) -> RolloutBatch:
        chunks = [items[i : i + params.batch_size] for i in range(0, len(items), params.batch_size)]
        was_training = self.model.training
        _set_training(self.model, False)
        try:
            with torch.no_grad(), gathered(self.model):  # a sharded model: all-gathered once, not per token
                batches = [run(chunk) for chunk in chunks]
        finally:
            _set_training(self.model, was_training)
        return RolloutBatch.concat(batches, self.pad_id)

    def _generate_chunk(
        self, prompts: list[str], params: SamplingParams, generator: torch.Generator
    ) -> RolloutBatch:
        # GRPO asks for each prompt G times: encode and prefill each distinct prompt once, then give every
        # completion a copy of its prompt's KV cache and next-token logits (the prefill is most of the cost).
        row_of = {p: i for i, p in enumerate(dict.fromkeys(prompts))}
        distinct = list(row_of)
        rows = torch.tensor([row_of[p] for p in prompts], device=self.device)  # [B]: each one's distinct row
        enc = self.tokenizer(
            distinct, return_tensors="pt", padding=True, padding_side="left", add_special_tokens=False
        )
        distinct_ids = enc["input_ids"].to(self.device)  # [D, Lp]
        distinct_mask = enc["attention_mask"].to(self.device)
        return self._sample(distinct_ids, distinct_mask, rows, params, generator, None)

    def _generate_ids_chunk(
        self,
        contexts: list[list[int]],
        params: SamplingParams,
        generator: torch.Generator,
        stopper: _StopStrings | None,
    ) -> RolloutBatch:
        row_of = {c: i for i, c in enumerate(dict.fromkeys(tuple(c) for c in contexts))}
        distinct = list(row_of)
        rows = torch.tensor([row_of[tuple(c)] for c in contexts], device=self.device)  # [B]
        width = max(len(c) for c in distinct)
        distinct_ids = torch.tensor(
            [[self.pad_id] * (width - len(c)) + list(c) for c in distinct],
            dtype=torch.long,
            device=self.device,
        )  # [D, Lp] left-padded, as the tokenizer pads prompts
        distinct_mask = torch.tensor(
            [[0] * (width - len(c)) + [1] * len(c) for c in distinct], dtype=torch.long, device=self.device
        )
        return self._sample(distinct_ids, distinct_mask, rows, params, generator, stopper)

    def _sample(
        self,
        distinct_ids: Tensor,
        distinct_mask: Tensor,
        rows: Tensor,
        params: SamplingParams,
        generator: torch.Generator,
        stopper: _StopStrings | None,
    ) -> RolloutBatch:
        """Prefill the distinct contexts [D, Lp] once, then sample one completion per entry of ``rows`` [B]."""
        out, past = prefill(self.model, distinct_ids, distinct_mask)
        # the model's own modules on a preallocated cache where its layout allows (trainer/rollout/cached_decoder.py)
        decoder = self.decoder if self.decoder is not None and params.max_new_tokens > 1 else None
        if decoder is None or not decoder.start(past, rows, params.max_new_tokens - 1):
            decoder = None
            past.reorder_cache(rows)  # [D, ...] -> [B, ...]
        logits = out.logits[rows, -1, :]  # [B, V]
        prompt_ids, prompt_mask = distinct_ids[rows], distinct_mask[rows]  # [B, Lp]
        B = prompt_ids.shape[0]
        eos_ids = torch.tensor(sorted(self.eos_ids), device=self.device, dtype=torch.long)
        one_eos = int(eos_ids[0]) if len(eos_ids) == 1 else None  # one comparison instead of isin a token

        attn = prompt_mask
        next_pos = attn.sum(-1, keepdim=True)  # [B, 1] position of the first completion token

        tokens: list[Tensor] = []
        logps: list[Tensor] = []
        ents: list[Tensor] = []
        alive = torch.ones(B, dtype=torch.bool, device=self.device)
        alive_steps: list[Tensor] = []  # never changed in place: each step's ``alive`` is a new tensor
        stopped = torch.zeros(B, dtype=torch.bool, device=self.device)
        for t in range(params.max_new_tokens):
            logp_all = torch.log_softmax(logits.float() / params.temperature, dim=-1)  # [B, V]
            sample_logits = _filter_logits(logp_all, params.top_k, params.top_p)
            probs = torch.softmax(sample_logits, dim=-1)
            tok = torch.multinomial(probs, 1, generator=generator).squeeze(-1)  # [B]
            tok = tok.masked_fill(~alive, self.pad_id)
            alive_steps.append(alive)
            tokens.append(tok)
            logps.append(logp_all.gather(-1, tok[:, None]).squeeze(-1) * alive)
            ents.append(-(logp_all.exp() * logp_all).sum(-1) * alive)  # per step: [B, T, V] would not fit
            alive = alive & (tok != one_eos if one_eos is not None else ~torch.isin(tok, eos_ids))
            if stopper is not None:
                hit = stopper.completed(tokens, alive)  # [B]
                stopped |= hit
                alive = alive & ~hit
            if not alive.any() or t == params.max_new_tokens - 1:
                break
            attn = torch.cat([attn, torch.ones_like(attn[:, :1])], dim=1)
            if decoder is not None:
                logits = decoder.step(tok, next_pos + t, attn, alive)
                continue
            out = self.model(
                input_ids=tok[:, None],
                attention_mask=attn,
                position_ids=next_pos + t,
                use_cache=True,
                **cache_kwargs(past),
            )
            past = output_cache(out)
            logits = out.logits[:, -1, :]

        completion_ids = torch.stack(tokens, dim=1)  # [B, T]
        completion_mask = torch.stack(alive_steps, dim=1).long()  # [B, T]
        finished_eos = torch.isin(completion_ids, eos_ids) & completion_mask.bool()
        finish_reasons = [
            "eos" if eos else "stop" if stop else "length"
            for eos, stop in zip(finished_eos.any(-1).tolist(), stopped.tolist(), strict=True)
        ]
        texts = self.tokenizer.batch_decode(
            [
                ids[: int(n)]
                for ids, n in zip(completion_ids.tolist(), completion_mask.sum(-1).tolist(), strict=True)
            ],
            skip_special_tokens=True,
        )
        return RolloutBatch(
            prompt_ids=prompt_ids,
            prompt_mask=prompt_mask,
            completion_ids=completion_ids,
            completion_mask=completion_mask,
            logprobs=torch.stack(logps, dim=1),
            entropies=torch.stack(ents, dim=1),
            finish_reasons=finish_reasons,
            texts=texts,
        )
