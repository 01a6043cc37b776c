"""One-token decode steps for the common decoder-only architectures, on a preallocated KV cache.

On small models a decode step is mostly per-operator overhead, and transformers' forward adds a good deal around
the arithmetic (mask building, cache bookkeeping, output objects, the attention dispatch; on CPU its SDPA call for a
one-token query costs more than the attention itself). This module runs the same modules of the model (its
embeddings, norms, projections, rotary embedding, MLPs and head, so its weights, biases and dtypes are the
model's own) with the glue written out: each layer's keys and values go into a buffer allocated
once per generation call, and attention for the one new token is scores, a float32 softmax and a weighted sum, as
transformers' eager attention computes it. The logits equal transformers' up to float rounding (tests compare
them step by step).

Only the Llama-style layout is taken (llama, mistral, qwen2, qwen3: pre-norm residual blocks, rotate-half rotary
embeddings, grouped-query attention, Qwen3's per-head q/k norms); any other model, a sliding-window layer, a
model wrapped by peft (its modules sit one level deeper) or sharded by FSDP, or a cache transformers did not fill with plain tensors gets ``None``
from :func:`decoder_for` and the engine keeps transformers' own forward. The prompt's prefill always runs through
transformers (trainer/models/logprobs.py ``prefill``).
"""

from __future__ import annotations

from typing import Any

import torch
from torch import Tensor, nn

from trainer.distributed.fsdp import is_sharded

LLAMA_LIKE = frozenset({"llama", "mistral", "qwen2", "qwen3"})
_LAYER_PARTS = ("input_layernorm", "post_attention_layernorm", "mlp", "self_attn")
_ATTENTION_PARTS = ("q_proj", "k_proj", "v_proj", "o_proj")


def decoder_for(model: nn.Module) -> CachedDecoder | None:
    """A :class:`CachedDecoder` over ``model``'s modules, or None when its layout is not one this module knows."""
    config = getattr(model, "config", None)
    inner = getattr(model, "model", None)
    if config is None or inner is None or getattr(config, "model_type", None) not in LLAMA_LIKE:
        return None
    if is_sharded(model) or not all(
        hasattr(inner, part) for part in ("embed_tokens", "layers", "norm", "rotary_emb")
    ):
        return None
    if getattr(config, "sliding_window", None) and getattr(config, "use_sliding_window", True):
        return None
    if any(t != "full_attention" for t in getattr(config, "layer_types", None) or ()):
        return None
    head = getattr(model, "lm_head", None)
    layers = list(inner.layers)
    if head is None or not layers:
        return None
    for layer in layers:
        attention = getattr(layer, "self_attn", None)
        if not all(hasattr(layer, p) for p in _LAYER_PARTS) or not all(
            hasattr(attention, p) for p in _ATTENTION_PARTS
        ):
            return None
        if not hasattr(attention, "head_dim") or not hasattr(attention, "scaling"):
            return None
    return CachedDecoder(inner, head, layers)


def _rotate_half(x: Tensor) -> Tensor:
    half = x.shape[-1] // 2
    return torch.cat((-x[..., half:], x[..., :half]), dim=-1)


# Below this many query x key x head-dim products a step's attention is computed as elementwise products and
# sums: a batched matmul pays a per-matrix cost for each of its B x H one-row products, which on a CPU costs more
# than the arithmetic. Above it (long contexts, big batches) the products' memory would be several times the KV
# cache's, so the matmuls run.
ELEMENTWISE_LIMIT = 1 << 22


def _attend(grouped: Tensor, keys: Tensor, values: Tensor, blocked: Tensor, scaling: float) -> Tensor:
    """Attention of one new token: ``grouped`` [B, H_kv, group, d] (query head j reads KV head j // group),
    ``keys``/``values`` [B, H_kv, L, d], ``blocked`` [B, 1, 1, L] True where a key is masked -> [B, H_kv, group, d].
    Scores in the model's dtype, softmax in float32, as transformers' eager attention."""
    elementwise = grouped.numel() * keys.shape[2] <= ELEMENTWISE_LIMIT
    if elementwise:
        scores = (grouped[:, :, :, None] * keys[:, :, None]).sum(-1) * scaling  # [B, H_kv, group, L]
    else:
        scores = torch.matmul(grouped, keys.transpose(2, 3)) * scaling
    probs = torch.softmax(scores.masked_fill(blocked, float("-inf")), dim=-1, dtype=torch.float32).to(
        grouped.dtype
    )
    if elementwise:
        return (probs[..., None] * values[:, :, None]).sum(-2)
    return torch.matmul(probs, values)


# Room for this many new tokens at first (most completions of a batch end early); a generation that goes on
# doubles its buffers.
FIRST_ROOM = 16


def _doubled(buffer: Tensor) -> Tensor:
    """``buffer`` [B, H, L, d] with L more positions (unwritten) after its own."""
    return torch.cat([buffer, torch.empty_like(buffer)], dim=2)


class CachedDecoder:
    """Decode steps over one generation call's KV cache: :meth:`start` from transformers' prefill cache, then
    :meth:`step` once per new token."""

    def __init__(self, inner: nn.Module, head: nn.Module, layers: list[nn.Module]) -> None:
        # transformers' modules, typed loosely: their submodules are found by name (checked in decoder_for)
        self.inner: Any = inner
        self.head: Any = head
        self.layers: list[Any] = layers
        self.keys: list[Tensor] = []
        self.values: list[Tensor] = []
        self.length = 0
        self.room_left = 0  # new tokens still allowed (start's new_tokens)
        # the generation's rows the buffers hold, in order (finished ones leave)
        self.held: Tensor | None = None

    def start(self, cache: Any, rows: Tensor, new_tokens: int) -> bool:
        """Copy the prefill ``cache`` ([D, H, L, d] per layer) to buffers of ``rows`` [B] with room for
        ``new_tokens`` more; False when the cache's layers are not plain key/value tensors (then use transformers)."""
        layers = getattr(cache, "layers", None)
        if not layers or len(layers) != len(self.layers):
            return False
        self.keys, self.values = [], []
        for layer in layers:
            keys, values = getattr(layer, "keys", None), getattr(layer, "values", None)
            if not isinstance(keys, Tensor) or not isinstance(values, Tensor) or keys.dim() != 4:
                return False
            self.keys.append(self._buffer(keys, rows, min(new_tokens, FIRST_ROOM)))
            self.values.append(self._buffer(values, rows, min(new_tokens, FIRST_ROOM)))
        self.length = int(self.keys[0].shape[2]) - min(new_tokens, FIRST_ROOM)
        self.room_left = new_tokens
        self.held = torch.arange(len(rows), device=rows.device)
        return True

    @staticmethod
    def _buffer(prefilled: Tensor, rows: Tensor, new_tokens: int) -> Tensor:
        _, h, length, width = prefilled.shape
        buffer = prefilled.new_empty((len(rows), h, length + new_tokens, width))
        buffer[:, :, :length] = prefilled[rows]
        return buffer

    def step(
        self, tokens: Tensor, positions: Tensor, attended: Tensor, alive: Tensor | None = None
    ) -> Tensor:
        """Logits [B, V] after ``tokens`` [B] at ``positions`` [B, 1]; ``attended`` [B, L + 1] (1: a key the new
        token may attend to: the prompt's non-padding tokens and every token generated so far, itself included).

        ``alive`` [B] (True: the row goes on): a finished row's logits are 0, and once a quarter of the rows the
        buffers hold have finished, the buffers are copied without them and they are not computed again."""
        n = self.length
        if self.room_left <= 0 or self.held is None:
            raise RuntimeError(
                "the decode cache is full: start() was given fewer new tokens than were decoded"
            )
        self.room_left -= 1
        if alive is not None:
            self._let_go(alive)
        if n >= self.keys[0].shape[2]:  # most completions end early: the room grows as they go on
            self.keys = [_doubled(k) for k in self.keys]
            self.values = [_doubled(v) for v in self.values]
        held = self.held
        if len(held) == len(tokens):
            logits = self._step(tokens, positions, attended)
        else:
            some = self._step(tokens[held], positions[held], attended[held])
            logits = some.new_zeros((len(tokens), some.shape[-1])).index_copy_(0, held, some)
        return logits if alive is None else logits.masked_fill(~alive[:, None], 0.0)

    def _let_go(self, alive: Tensor) -> None:
        """Copy the buffers without the rows that have finished, once they are a quarter of the rows held."""
        assert self.held is not None
        going_on = alive[self.held]
        if int(going_on.sum()) * 4 > len(self.held) * 3:
            return
        keep = going_on.nonzero().flatten()
        if not len(keep):  # all finished: keep one, whose logits are thrown away like any finished row's
            keep = keep.new_zeros(1)
        self.held = self.held[keep]
        self.keys = [k[keep] for k in self.keys]
        self.values = [v[keep] for v in self.values]

    def _step(self, tokens: Tensor, positions: Tensor, attended: Tensor) -> Tensor:
        """``step`` over the rows the buffers hold, in their order."""
        n = self.length
        x = self.inner.embed_tokens(tokens[:, None])  # [B, 1, hidden]
        cos, sin = self.inner.rotary_emb(x, positions)  # [B, 1, d]
        cos, sin = cos[:, None], sin[:, None]  # [B, 1, 1, d] against [B, H, 1, d]
        blocked = ~attended[:, None, None, : n + 1].bool()  # [B, 1, 1, n + 1]
        batch = tokens.shape[0]
        for layer, keys, values in zip(self.layers, self.keys, self.values, strict=True):
            attention = layer.self_attn
            d = attention.head_dim
            h = layer.input_layernorm(x)
            q = attention.q_proj(h).view(batch, 1, -1, d)
            k = attention.k_proj(h).view(batch, 1, -1, d)
            v = attention.v_proj(h).view(batch, 1, -1, d)
            if hasattr(attention, "q_norm"):  # Qwen3: RMSNorm over each head before the rotation
                q, k = attention.q_norm(q), attention.k_norm(k)
            q, k, v = q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2)  # [B, H, 1, d]
            q = q * cos + _rotate_half(q) * sin
            k = k * cos + _rotate_half(k) * sin
            keys[:, :, n : n + 1] = k
            values[:, :, n : n + 1] = v
            kv_heads = keys.shape[1]
            out = _attend(
                q.reshape(batch, kv_heads, -1, d),
                keys[:, :, : n + 1],
                values[:, :, : n + 1],
                blocked,
                attention.scaling,
            )
            x = x + attention.o_proj(out.reshape(batch, 1, -1))
            x = x + layer.mlp(layer.post_attention_layernorm(x))
        self.length = n + 1
        logits: Tensor = self.head(self.inner.norm(x))[:, -1, :]
        return logits
