"""Answer-span masking (OM-GRPO, shared/seeds 001:L73): the regex span mapped onto completion tokens."""

from __future__ import annotations

import re
from typing import ClassVar

import torch

from trainer.methods.answer_span import answer_char_span, answer_span_token_mask, token_char_ranges
from trainer.models.tiny_model import char_tokenizer

TOK = char_tokenizer()


def encode(text: str, eos: bool = True) -> list[int]:
    ids = TOK(text, add_special_tokens=False)["input_ids"]
    return ids + ([TOK.eos_token_id] if eos else [])


def test_the_last_match_is_the_answer() -> None:
    assert answer_char_span("3+4 is 7, so 12", re.compile(r"-?\d+")) == (13, 15)


def test_a_named_answer_group_narrows_the_span() -> None:
    assert answer_char_span("so \\boxed{42}.", re.compile(r"\\boxed\{(?P<answer>[^}]*)\}")) == (10, 12)


def test_no_match_means_no_span() -> None:
    assert answer_char_span("no digits here", re.compile(r"\d+")) is None


def test_token_ranges_follow_the_decoded_text_and_special_tokens_are_empty() -> None:
    ids = encode("ab 7")
    assert token_char_ranges(ids, "ab 7", TOK) == [(0, 1), (1, 2), (2, 3), (3, 4), (4, 4)]


def test_only_the_answer_tokens_leave_the_loss() -> None:
    texts = ["x=12 so 34", "none"]
    rows = [encode(t) for t in texts]
    width = max(len(r) for r in rows)
    ids = torch.tensor([r + [TOK.pad_token_id] * (width - len(r)) for r in rows])
    keep = answer_span_token_mask(ids, [len(r) for r in rows], texts, TOK, r"-?\d+")
    # "x=12 so 34<eos>": the last number "34" is tokens 8 and 9; the EOS stays in the loss
    assert keep[0].tolist() == [1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 1]
    assert keep[1].tolist() == [1.0] * width  # no answer found: nothing masked


def test_when_token_pieces_do_not_add_up_prefix_decoding_is_used() -> None:
    class SpacedTokenizer:  # a tokenizer whose decode puts spaces between tokens, as some word-level ones do
        words: ClassVar[dict[int, str]] = {0: "the", 1: "answer", 2: "is", 3: "42"}

        def batch_decode(self, rows: list[list[int]], skip_special_tokens: bool = True) -> list[str]:
            return [self.decode(r) for r in rows]

        def decode(self, ids: list[int], skip_special_tokens: bool = True) -> str:
            return " ".join(self.words[i] for i in ids)

    text = "the answer is 42"
    ranges = token_char_ranges([0, 1, 2, 3], text, SpacedTokenizer())  # type: ignore[arg-type]
    assert ranges == [(0, 3), (3, 10), (10, 13), (13, 16)]
    span = answer_char_span(text, re.compile(r"\d+"))
    assert span == (14, 16)
    assert [start < span[1] and end > span[0] for start, end in ranges] == [False, False, False, True]
