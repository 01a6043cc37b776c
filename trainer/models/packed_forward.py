"""The training forward without padding: prompts and completions packed into a few rows under a block mask.

A GRPO batch is G completions of each prompt, left-padded to the longest prompt and right-padded to the longest
completion, and most completions end well before the longest: on the built-in tasks half or more of a padded
batch's positions are padding, and every linear layer pays for them. Here each distinct prompt is laid down once,
followed by its completions, one after another, in rows of at most the model's width in tokens; a 4-D attention
mask lets each completion token see its own prompt and its own earlier tokens only (and each prompt token its own
prompt), and the position ids restart with each prompt and continue from the prompt's length in each completion.
So the model computes, token for token, what one forward over the whole padded rows computes (values and gradients
equal up to float rounding), over the real tokens only, with each shared prompt run once: Prefix Grouper's shared
prefix (Liu et al. 2025, "Prefix Grouper: Efficient GRPO Training through Shared-Prefix Forward") with the
padding-free packing of variable-length batches on top.

It needs a model that takes a custom 4-D mask and plain 1-D position ids and whose layers all attend over the whole
context: the Llama-style families below with SDPA or eager attention (a sliding-window layer would be given a mask
without its window). Other models, FSDP-sharded ones (every rank must make the same calls) and a model marked by
``keep_padding`` take trainer/models/logprobs.py's other paths; so do rows whose masks are not a left-padded prompt
followed by a completion that ends at its first masked position.
"""

from __future__ import annotations

import torch
from torch import Tensor, nn

from trainer.distributed.fsdp import is_sharded

PACKABLE = frozenset({"llama", "mistral", "qwen2", "qwen3"})
_MASK_KINDS = frozenset({"sdpa", "eager"})  # attention implementations that read a 4-D mask as given
_KEEP_PADDING = "_rlvr_keep_padding"  # set on a model by keep_padding
# A packed row holds at most ROW_TOKENS_PER_WIDTH x the model's hidden size tokens (a prompt and one completion
# longer than that get a row of their own). The mask makes every token of a row attend over the whole row (its
# masked keys cost as much as the others), about 4 x tokens x hidden flops a layer against the linear layers' ~32 x
# hidden^2: at hidden-size rows a row's attention costs an eighth of its linear layers, and longer rows soon cost
# more than the padding they save. benchmarks/packed_forward.py times rows of 64..2048 tokens against the padded
# paths (results/packed_forward.md): on the 128-wide tiny chain model rows of 128 tokens were the fastest.
ROW_TOKENS_PER_WIDTH = 1
MIN_ROW_TOKENS = 64


def keep_padding(model: nn.Module) -> None:
    """Never pack for ``model`` (``training.packed_forward`` false)."""
    setattr(model, _KEEP_PADDING, True)


def can_pack(model: nn.Module) -> bool:
    """Whether ``model`` computes over a packed row what it computes over the padded rows (module docstring)."""
    config = getattr(model, "config", None)
    if config is None or getattr(model, _KEEP_PADDING, False) or is_sharded(model):
        return False
    if getattr(config, "model_type", None) not in PACKABLE:
        return False
    if getattr(config, "_attn_implementation", None) not in _MASK_KINDS:
        return False
    if getattr(config, "sliding_window", None) and getattr(config, "use_sliding_window", True):
        return False
    return all(t == "full_attention" for t in getattr(config, "layer_types", None) or ())


def row_tokens_for(model: nn.Module) -> int:
    """The longest packed row for ``model``: ``ROW_TOKENS_PER_WIDTH`` x its hidden size (see above)."""
    width = int(getattr(model.config, "hidden_size", 0) or 0)
    return max(MIN_ROW_TOKENS, ROW_TOKENS_PER_WIDTH * width)


def _is_prefix(mask: Tensor) -> bool:
    """Every row of ``mask`` [B, T] is ones then zeros."""
    return bool((mask[:, 1:] <= mask[:, :-1]).all())


def packed_logits(
    model: nn.Module,
    prompt_ids: Tensor,
    prompt_mask: Tensor,
    completion_ids: Tensor,
    completion_mask: Tensor,
    row_tokens: int | None = None,
) -> Tensor | None:
    """Logits [B, T, V] for the completion tokens from one packed forward; None when the masks are not left-padded
    prompts and right-padded completions (then nothing has run). Positions past a completion's end hold the logits
    of its first position (finite; the caller masks them)."""
    if not _is_prefix(completion_mask) or not _is_prefix(prompt_mask.flip(1)):
        return None
    B, T = completion_ids.shape
    width = prompt_ids.shape[1]
    row_tokens = row_tokens_for(model) if row_tokens is None else row_tokens
    keys = torch.cat([prompt_ids * prompt_mask, prompt_mask], dim=1)  # padding ids do not make prompts differ
    distinct, of_row = torch.unique(keys, dim=0, return_inverse=True)  # [D, 2 Lp], [B]
    prompt_lengths = distinct[:, width:].sum(-1).tolist()
    if min(prompt_lengths) < 1:
        return None  # an empty prompt has no position to predict the first token from
    distinct_ids = distinct[:, :width].tolist()
    lengths = completion_mask.sum(-1).tolist()
    completions = completion_ids.tolist()
    members: list[list[int]] = [[] for _ in prompt_lengths]
    for b, d in enumerate(of_row.tolist()):
        members[d].append(b)

    # The layout: rows of packed tokens, each token with its position, its prompt copy and its completion (-1: the
    # prompt's own tokens); and for every completion token, where its logits come out.
    ids: list[list[int]] = [[]]
    positions: list[list[int]] = [[]]
    copies: list[list[int]] = [[]]
    owners: list[list[int]] = [[]]
    source = [[(0, 0)] * T for _ in range(B)]  # (packed row, column) whose logits predict completion token t
    copy = -1
    for d, rows in enumerate(members):
        n = prompt_lengths[d]
        prompt = distinct_ids[d][width - n :]
        last_prompt: tuple[int, int] | None = None
        for b in rows:
            inputs = completions[b][: max(int(lengths[b]) - 1, 0)]  # the last token predicts nothing scored
            if last_prompt is not None and len(ids[-1]) + len(inputs) > row_tokens:
                last_prompt = (
                    None  # this prompt's next completions go in a new row, with a copy of the prompt
                )
            if last_prompt is None:
                if ids[-1] and len(ids[-1]) + n + len(inputs) > row_tokens:
                    for lists in (ids, positions, copies, owners):
                        lists.append([])
                copy += 1
                ids[-1] += prompt
                positions[-1] += range(n)
                copies[-1] += [copy] * n
                owners[-1] += [-1] * n
                last_prompt = (len(ids) - 1, len(ids[-1]) - 1)
            row, start = len(ids) - 1, len(ids[-1])
            ids[-1] += inputs
            positions[-1] += range(n, n + len(inputs))
            copies[-1] += [copy] * len(inputs)
            owners[-1] += [b] * len(inputs)
            source[b] = [last_prompt] + [(row, start + t) for t in range(len(inputs))]
            source[b] += [last_prompt] * (T - len(source[b]))

    device = completion_ids.device
    N = max(len(r) for r in ids)

    def padded(lists: list[list[int]], fill: int) -> Tensor:
        return torch.tensor([r + [fill] * (N - len(r)) for r in lists], dtype=torch.long, device=device)

    input_ids = padded(ids, 0)  # [R, N]
    position_ids = padded(positions, 0)
    copy_of = padded(copies, -1)
    owner = padded(owners, -2)
    index = torch.arange(N, device=device)
    same_copy = copy_of[:, :, None] == copy_of[:, None, :]  # [R, N, N] query x key
    own = (owner[:, None, :] == -1) | (
        owner[:, None, :] == owner[:, :, None]
    )  # the prompt, or the same completion
    allowed = same_copy & own & (index[None, :, None] >= index[None, None, :])
    allowed |= torch.eye(
        N, dtype=torch.bool, device=device
    )  # a padding position attends to itself: no empty row
    mask: Tensor = allowed[:, None]  # [R, 1, N, N]
    if getattr(model.config, "_attn_implementation", None) == "eager":  # eager attention adds the mask
        dtype = next(model.parameters()).dtype
        mask = torch.zeros(mask.shape, dtype=dtype, device=device).masked_fill(~mask, torch.finfo(dtype).min)
    out = model(input_ids=input_ids, attention_mask=mask, position_ids=position_ids, use_cache=False)
    where = torch.tensor(source, dtype=torch.long, device=device)  # [B, T, 2]
    logits: Tensor = out.logits[where[..., 0], where[..., 1]]  # [B, T, V]
    return logits
