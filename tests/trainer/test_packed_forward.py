"""The packed training forward (trainer/models/packed_forward.py): the values and gradients of one forward over the
padded rows, from rows packed without padding; and the cases it leaves to the other paths."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from transformers import AutoConfig, AutoModelForCausalLM, GPT2Config, GPT2LMHeadModel, PreTrainedModel

from tests.trainer.test_shared_prompt_logprobs import groups, one_forward, values_and_grads
from trainer.models.logprobs import completion_logprobs, score_full_rows, token_logprobs_and_entropy
from trainer.models.packed_forward import can_pack, keep_padding, packed_logits
from trainer.models.transformers_compat import enable_activation_checkpointing


def _packed(row_tokens: int):  # type: ignore[no-untyped-def]
    def score(model: PreTrainedModel, *batch: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        logits = packed_logits(model, *batch, row_tokens=row_tokens)
        assert logits is not None
        return token_logprobs_and_entropy(logits, batch[2], 1.0)

    return score


def _assert_same(got: tuple[torch.Tensor, ...], expected: tuple[torch.Tensor, ...]) -> None:
    torch.testing.assert_close(got[0], expected[0], rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(got[1], expected[1], rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(got[2], expected[2], rtol=1e-4, atol=2e-6)
    assert expected[2].abs().max() > 0


# 2048: every group in one row; 20: some groups split over rows, each with a copy of its prompt; 8: a prompt and one
# completion per row, several rows a group.
@pytest.mark.parametrize("row_tokens", [2048, 20, 8])
@pytest.mark.parametrize("attention", ["sdpa", "eager"])
def test_packed_rows_give_the_logprobs_entropies_and_gradients_of_one_forward(
    random_model_dir: Path, attention: str, row_tokens: int
) -> None:
    model = AutoModelForCausalLM.from_pretrained(random_model_dir, attn_implementation=attention).train()
    assert can_pack(model)
    batch = groups()

    _assert_same(
        values_and_grads(model, _packed(row_tokens), *batch), values_and_grads(model, one_forward, *batch)
    )


def test_rows_with_distinct_prompts_share_packed_rows(random_model_dir: Path) -> None:
    model = AutoModelForCausalLM.from_pretrained(random_model_dir).train()
    batch = groups(G=1)

    _assert_same(values_and_grads(model, _packed(2048), *batch), values_and_grads(model, one_forward, *batch))


def test_activation_checkpointing_and_dropout_pack_too(random_model_dir: Path) -> None:
    model = AutoModelForCausalLM.from_pretrained(random_model_dir).train()
    enable_activation_checkpointing(model)
    assert can_pack(model)  # one plain forward: the checkpoints recompute it as it ran
    batch = groups()
    _assert_same(values_and_grads(model, _packed(2048), *batch), values_and_grads(model, one_forward, *batch))
    dropout = AutoModelForCausalLM.from_pretrained(random_model_dir, attention_dropout=0.1).train()
    assert can_pack(dropout)  # every token draws its own dropout, as in the padded forward


def test_completion_logprobs_packs_and_zeroes_what_lies_past_each_end(random_model_dir: Path) -> None:
    model = AutoModelForCausalLM.from_pretrained(random_model_dir).eval()
    prompt_ids, prompt_mask, completion_ids, completion_mask = groups()

    logp, entropy = completion_logprobs(model, prompt_ids, prompt_mask, completion_ids, completion_mask, 1.0)

    expected = one_forward(model, prompt_ids, prompt_mask, completion_ids, completion_mask)
    torch.testing.assert_close(logp, expected[0] * completion_mask, rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(entropy, expected[1] * completion_mask, rtol=1e-5, atol=1e-5)
    assert not logp[completion_mask == 0].any() and not entropy[completion_mask == 0].any()


def test_masks_with_holes_are_left_to_the_padded_forward(random_model_dir: Path) -> None:
    model = AutoModelForCausalLM.from_pretrained(random_model_dir).eval()
    prompt_ids, prompt_mask, completion_ids, completion_mask = groups()
    holed = completion_mask.clone()
    holed[-1, :] = torch.tensor([1, 0, 1, 1, 0])  # a completion that goes on after a masked token
    assert packed_logits(model, prompt_ids, prompt_mask, completion_ids, holed) is None
    right_padded = prompt_mask.flip(1)
    assert packed_logits(model, prompt_ids, right_padded, completion_ids, completion_mask) is None

    logp, _ = completion_logprobs(model, prompt_ids, prompt_mask, completion_ids, holed, 1.0)

    expected = one_forward(model, prompt_ids, prompt_mask, completion_ids, holed)[0]
    torch.testing.assert_close(logp * holed, expected * holed, rtol=1e-5, atol=1e-5)


def test_models_it_cannot_pack_for(random_model_dir: Path) -> None:
    gpt2 = GPT2LMHeadModel(GPT2Config(vocab_size=64, n_embd=32, n_layer=1, n_head=2, n_positions=64))
    assert not can_pack(gpt2)  # not a layout known to read a 4-D mask and 1-D positions as given
    config = AutoConfig.from_pretrained(random_model_dir)
    config.use_sliding_window, config.sliding_window = True, 8
    config.layer_types = ["sliding_attention"] * config.num_hidden_layers
    assert not can_pack(AutoModelForCausalLM.from_config(config))  # the mask would lose the window
    batch = groups()  # 3 prompts of width 7, 12 completions of width 5
    for mark, shapes in ((None, [(1, 39)]), (keep_padding, [(3, 7), (12, 4)]), (score_full_rows, [(12, 12)])):
        model = AutoModelForCausalLM.from_pretrained(random_model_dir)
        if mark is not None:
            mark(model)
        calls: list[tuple[int, ...]] = []
        model.register_forward_pre_hook(
            lambda _, args, kwargs, calls=calls: calls.append(tuple(kwargs["input_ids"].shape)),
            with_kwargs=True,
        )
        completion_logprobs(model, *batch, 1.0)
        assert calls == shapes, mark  # one packed row; the shared prompts' cache; the padded rows
