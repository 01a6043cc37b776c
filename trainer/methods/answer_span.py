"""Answer-span masking (OM-GRPO, shared/seeds 001:L73): keep the answer tokens out of the loss.

OM-GRPO observes that when the same answer-level signal both sets the reward and trains the answer tokens,
label-free RL collapses into reinforcing the answer itself; it masks the gradient on the answer span and
keeps the answer-level reward on the reasoning tokens.

Axis ``algorithm.loss_masks`` (a list), hook point ``loss_mask``; hook signature ``(batch, tokenizer, params) ->
keep mask [N, T]`` (1 keeps a token in the loss).

How the span is found: the LAST match of the ``pattern`` parameter in the decoded completion text
(with a group named ``answer``, or exactly one group, only that group). How it maps to tokens: each
completion token's character range in that text comes from decoding the tokens one at a time (special
tokens decode to ''); when the pieces do not add up to the decoded text (byte-level BPE splitting a
multi-byte character, tokenizers that add spaces between tokens), the ranges come from decoding growing
prefixes instead. A token is masked when its range overlaps the span's by at least one character.

Differs from OM-GRPO: the paper's span is the answer its soft-consensus voting extracts; here it is any
regular expression, and masking removes the tokens from the loss (policy and KL terms) rather than only
zeroing their advantage.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from pydantic import Field, field_validator

from trainer.bounds import BoundedModel
from trainer.methods.axes import Axis
from trainer.user_regex import PatternError, UserPattern, check_user_pattern, compile_user_pattern

if TYPE_CHECKING:  # torch stays out of module scope: the web process validates configs
    from torch import Tensor
    from transformers import PreTrainedTokenizerBase

    from trainer.rollout.base import RolloutBatch

LOSS_MASKS: Axis[Any] = Axis(
    "loss mask",
    "algorithm.loss_masks",
    "loss_mask",
    default=None,
    many=True,
    description="Tokens taken out of the loss, besides padding and (mask_truncated_completions) truncated completions.",
)


class AnswerSpanParams(BoundedModel):
    pattern: str = Field(
        r"-?\d+(?:[.,/]\d+)*",
        description="Regular expression for the answer span (OM-GRPO). The LAST match in the completion is the "
        "answer; with a group named 'answer' (or exactly one group) only that group's characters are masked. "
        "Default: the last number. For boxed answers: '\\\\boxed\\{(?P<answer>[^}]*)\\}'.",
    )

    @field_validator("pattern")
    @classmethod
    def _pattern_compiles(cls, value: str) -> str:
        try:
            check_user_pattern(value, what="answer_span pattern")
        except PatternError as err:
            raise ValueError(str(err)) from None
        return value


def answer_char_span(text: str, pattern: UserPattern | re.Pattern[str]) -> tuple[int, int] | None:
    """(start, end) characters of the answer in ``text``: the last match (or its answer group), or None."""
    last = None
    for last in pattern.finditer(text):  # noqa: B007  # the loop leaves the last match in ``last``
        pass
    if last is None:
        return None
    if "answer" in pattern.groupindex:
        group: int | str = "answer"
    else:
        group = 1 if pattern.groups == 1 else 0
    if last.start(group) < 0:  # the group did not take part in the match
        return None
    return last.start(group), last.end(group)


def token_char_ranges(
    token_ids: Sequence[int], text: str, tokenizer: PreTrainedTokenizerBase
) -> list[tuple[int, int]]:
    """Each token's (start, end) characters in ``text`` (the completion decoded with special tokens skipped)."""
    pieces = tokenizer.batch_decode([[t] for t in token_ids], skip_special_tokens=True)
    if "".join(pieces) != text:  # pieces do not concatenate to the text: measure growing prefixes instead
        pieces = []
        previous = 0
        for n in range(1, len(token_ids) + 1):
            length = len(tokenizer.decode(list(token_ids[:n]), skip_special_tokens=True))
            pieces.append(" " * max(length - previous, 0))
            previous = max(length, previous)
    ranges, pos = [], 0
    for piece in pieces:
        ranges.append((pos, pos + len(piece)))
        pos += len(piece)
    return ranges


def answer_span_token_mask(
    completion_ids: Tensor,
    lengths: Sequence[int],
    texts: Sequence[str],
    tokenizer: PreTrainedTokenizerBase,
    pattern: str,
) -> Tensor:
    """1 for tokens to keep, 0 for tokens in the answer span. [N, T] like ``completion_ids``."""
    import torch

    compiled = compile_user_pattern(pattern, what="answer_span pattern")  # RE2: linear time
    keep = torch.ones_like(completion_ids, dtype=torch.float32)
    ids = completion_ids.tolist()
    for row, (n, text) in enumerate(zip(lengths, texts, strict=True)):
        span = answer_char_span(text, compiled)
        if span is None:
            continue
        for t, (start, end) in enumerate(token_char_ranges(ids[row][: int(n)], text, tokenizer)):
            if start < span[1] and end > span[0]:
                keep[row, t] = 0.0
    return keep


@LOSS_MASKS.method("answer_span", params=AnswerSpanParams)
def answer_span_mask(
    batch: RolloutBatch, tokenizer: PreTrainedTokenizerBase, params: AnswerSpanParams
) -> Tensor:
    """OM-GRPO answer-span masking: the tokens of the answer span leave the loss, so the answer-level reward
    trains the reasoning tokens only."""
    return answer_span_token_mask(
        batch.completion_ids, batch.lengths.tolist(), batch.texts, tokenizer, params.pattern
    )
