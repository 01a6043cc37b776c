"""Per-token log-probabilities and entropies of given completions under a model (the training forward).

Positions are computed from the attention mask (``cumsum - 1``) both here and in the rollout engine, so
a left-padded prompt sees the same positions at sampling and at training time and the first PPO ratio
is exactly 1 up to float rounding.

Where the model allows it, the rows are packed without their padding, each shared prompt once, and scored in one
forward under a block mask (trainer/models/packed_forward.py; ``training.packed_forward``). Otherwise:

GRPO scores every prompt G times (a group), so most rows of a batch share their prompt. When they do, each
distinct prompt goes through the model once and its KV cache (with its autograd graph) is copied to the rows
that share it; the completions then run on top of it, as the rollout engine decodes them. The values are those
of one forward over the whole rows (up to float rounding) and so are the gradients, which flow back through the
copied cache into the one prompt pass (the copy's backward sums them): the same shared-prefix forward that
Prefix Grouper (Liu et al. 2025, "Prefix Grouper: Efficient GRPO Training through Shared-Prefix Forward")
proposes, with the cache standing in for its grouped attention. On the tiny models the prompt is most of each
row, so a training forward and backward does about half the work. Rows whose prompts all differ, a model that
recomputes activations in the backward pass (it runs without a cache), an FSDP-sharded model (its ranks must
make the same forwards), active dropout (one dropout mask would serve a whole group), caches whose layers are not
plain concatenating ones and a model marked by ``score_full_rows`` (``training.shared_prompt_forward`` false) take
the one-forward path.
"""

from __future__ import annotations

from typing import Any

import torch
from torch import Tensor, nn
from transformers import PreTrainedModel

from trainer.models.packed_forward import can_pack, packed_logits
from trainer.models.transformers_compat import RENAMED, cache_kwargs, output_cache

# Cache layers whose update concatenates the new keys and values (autograd follows them) and whose
# reorder_cache is an index_select: transformers' DynamicCache layers.
_CONCATENATING_LAYERS = frozenset({"DynamicLayer", "DynamicSlidingWindowLayer"})
_FULL_ROWS = "_rlvr_score_full_rows"  # set on a model by score_full_rows


def positions_from_mask(attention_mask: Tensor) -> Tensor:
    """Position ids that skip left padding. [B, L] -> [B, L]."""
    return (attention_mask.long().cumsum(-1) - 1).clamp(min=0)


def token_logprobs_and_entropy(logits: Tensor, tokens: Tensor, temperature: float) -> tuple[Tensor, Tensor]:
    """From raw logits [B, T, V] and chosen tokens [B, T]: (logprob [B, T], entropy [B, T])."""
    logp_all = torch.log_softmax(logits.float() / temperature, dim=-1)  # [B, T, V]
    logp = logp_all.gather(-1, tokens.unsqueeze(-1)).squeeze(-1)  # [B, T]
    entropy = -(logp_all.exp() * logp_all).sum(-1)  # [B, T]
    return logp, entropy


def completion_logprobs(
    model: PreTrainedModel,
    prompt_ids: Tensor,
    prompt_mask: Tensor,
    completion_ids: Tensor,
    completion_mask: Tensor,
    temperature: float,
) -> tuple[Tensor, Tensor]:
    """(logprob [B, T], entropy [B, T]) of ``completion_ids`` given left-padded prompts; a prompt that several
    rows share is run once (see the module docstring)."""
    if len(prompt_ids) > 1 and can_pack(model) and not getattr(model, _FULL_ROWS, False):
        logits = packed_logits(model, prompt_ids, prompt_mask, completion_ids, completion_mask)
        if logits is not None:  # 0 past each completion's end, where the packed rows hold no token
            logp, entropy = token_logprobs_and_entropy(logits, completion_ids, temperature)
            kept = completion_mask.to(logp.dtype)
            return logp * kept, entropy * kept
    shared = _shared_prompts(model, prompt_ids, prompt_mask)
    if shared is not None:
        logits = _logits_on_shared_prompts(model, *shared, prompt_mask, completion_ids, completion_mask)
        if logits is not None:
            return token_logprobs_and_entropy(logits, completion_ids, temperature)
    input_ids = torch.cat([prompt_ids, completion_ids], dim=1)  # [B, Lp + T]
    attention_mask = torch.cat([prompt_mask, completion_mask], dim=1)
    T = completion_ids.shape[1]
    out = model(
        input_ids=input_ids,
        attention_mask=attention_mask,
        position_ids=positions_from_mask(attention_mask),
        use_cache=False,
        logits_to_keep=T + 1,
    )
    logits = out.logits[:, :-1, :]  # [B, T, V]: position t predicts completion token t
    return token_logprobs_and_entropy(logits, completion_ids, temperature)


def _shared_prompts(
    model: nn.Module, prompt_ids: Tensor, prompt_mask: Tensor
) -> tuple[Tensor, Tensor, Tensor] | None:
    """(distinct prompt ids [D, Lp], their masks [D, Lp], each row's distinct index [B]) when rows share prompts
    and the shared path applies to ``model``; None otherwise."""
    if len(prompt_ids) < 2 or not _can_share(model):
        return None
    keys = torch.cat([prompt_ids * prompt_mask, prompt_mask], dim=1)  # padding ids do not make prompts differ
    distinct, rows = torch.unique(keys, dim=0, return_inverse=True)  # [D, 2 Lp], [B]
    if len(distinct) == len(prompt_ids):
        return None
    width = prompt_ids.shape[1]
    return distinct[:, :width], distinct[:, width:], rows


def score_full_rows(model: nn.Module) -> None:
    """Never share prompts for ``model`` (``training.shared_prompt_forward`` false)."""
    setattr(model, _FULL_ROWS, True)


def _can_share(model: nn.Module) -> bool:
    """Whether a forward with a cache behaves as the one-forward path for ``model`` (module docstring)."""
    if getattr(model, _FULL_ROWS, False):
        return False
    if getattr(model, "is_activation_checkpointing" if RENAMED else "is_gradient_checkpointing", False):
        return False
    if any(c.__name__ == "FSDPModule" for c in type(model).__mro__):  # torch.distributed.fsdp.fully_shard
        return False
    return not (model.training and dropout_active(model))


def dropout_active(model: nn.Module) -> bool:
    """A dropout layer or a ``*dropout`` / ``*pdrop`` config rate above 0 (attention dropout is functional)."""
    if any(isinstance(m, nn.modules.dropout._DropoutNd) and m.p > 0 for m in model.modules()):
        return True
    config = getattr(model, "config", None)
    rates = vars(config).items() if config is not None else ()
    return any(
        (name.endswith("dropout") or name.endswith("pdrop")) and isinstance(v, int | float) and v > 0
        for name, v in rates
    )


def prefill(model: PreTrainedModel, ids: Tensor, mask: Tensor) -> tuple[Any, Any]:
    """One forward over left-padded contexts [D, L] with a cache: (the output, whose logits [D, 1, V] are the last
    position's, the cache). The rollout engine samples on from it; the shared-prompt forward trains through it."""
    out = model(
        input_ids=ids,
        attention_mask=mask,
        position_ids=positions_from_mask(mask),
        use_cache=True,
        logits_to_keep=1,
    )
    return out, output_cache(out)


def _logits_on_shared_prompts(
    model: PreTrainedModel,
    distinct_ids: Tensor,
    distinct_mask: Tensor,
    rows: Tensor,
    prompt_mask: Tensor,
    completion_ids: Tensor,
    completion_mask: Tensor,
) -> Tensor | None:
    """Logits [B, T, V] for the completion tokens, each distinct prompt run once; None when the model's cache
    cannot be copied to the rows with its gradient (then nothing is kept of this pass)."""
    out, past = prefill(model, distinct_ids, distinct_mask)
    layers = getattr(past, "layers", None)
    if not layers or any(type(layer).__name__ not in _CONCATENATING_LAYERS for layer in layers):
        return None
    first = out.logits[rows, -1:, :]  # [B, 1, V]: the prompt's last position predicts completion token 0
    T = completion_ids.shape[1]
    if T == 1:
        return first
    past.reorder_cache(rows)  # [D, ...] -> [B, ...]; its backward sums the rows' gradients per prompt
    attention_mask = torch.cat([prompt_mask, completion_mask[:, :-1]], dim=1)  # [B, Lp + T - 1]
    rest = model(
        input_ids=completion_ids[:, :-1],  # the last token predicts nothing that is scored
        attention_mask=attention_mask,
        position_ids=positions_from_mask(attention_mask)[:, -(T - 1) :],
        use_cache=True,
        **cache_kwargs(past),
    )
    return torch.cat([first, rest.logits], dim=1)  # [B, T, V]
