"""The training forward runs a prompt that several rows share once (trainer/models/logprobs.py): its logprobs,
entropies and gradients are those of one forward over the whole rows, and it steps aside where it would not be."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
import torch
from transformers import AutoModelForCausalLM, PreTrainedModel

from trainer.models.logprobs import _can_share, _shared_prompts, completion_logprobs, positions_from_mask
from trainer.models.packed_forward import can_pack, keep_padding
from trainer.models.transformers_compat import enable_activation_checkpointing


def one_forward(
    model: PreTrainedModel,
    prompt_ids: torch.Tensor,
    prompt_mask: torch.Tensor,
    completion_ids: torch.Tensor,
    completion_mask: torch.Tensor,
) -> tuple[torch.Tensor, torch.Tensor]:
    """The reference: one forward over prompt + completion, written out here (not the module's own path)."""
    ids = torch.cat([prompt_ids, completion_ids], 1)
    mask = torch.cat([prompt_mask, completion_mask], 1)
    logits = model(
        input_ids=ids, attention_mask=mask, position_ids=positions_from_mask(mask), use_cache=False
    ).logits
    T = completion_ids.shape[1]
    logp_all = torch.log_softmax(logits[:, -T - 1 : -1].float(), -1)
    return logp_all.gather(-1, completion_ids[..., None])[..., 0], -(logp_all.exp() * logp_all).sum(-1)


def groups(G: int = 4, T: int = 5) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """Three prompts of different lengths (left-padded with different pad ids), G completions each."""
    gen = torch.Generator().manual_seed(0)
    prompts = torch.randint(3, 60, (3, 7), generator=gen)
    masks = torch.ones(3, 7, dtype=torch.long)
    masks[0, :2], masks[1, :1] = 0, 0
    rows = torch.arange(3).repeat_interleave(G)
    prompt_ids, prompt_mask = prompts[rows], masks[rows]
    prompt_ids[prompt_mask == 0] = torch.randint(0, 3, (int((prompt_mask == 0).sum()),), generator=gen)
    completion_ids = torch.randint(3, 60, (3 * G, T), generator=gen)
    completion_mask = torch.ones(3 * G, T, dtype=torch.long)
    for i in range(3 * G):
        completion_mask[i, 1 + i % T :] = 0  # lengths 1..T
    return prompt_ids, prompt_mask, completion_ids, completion_mask


@pytest.fixture()
def model(random_model_dir: Path) -> PreTrainedModel:
    return AutoModelForCausalLM.from_pretrained(random_model_dir).train()


Scorer = Callable[..., tuple[torch.Tensor, torch.Tensor]]


def values_and_grads(model: PreTrainedModel, fn: Scorer, *batch: torch.Tensor) -> tuple[torch.Tensor, ...]:
    model.zero_grad()
    logp, entropy = fn(model, *batch)
    mask = batch[3].float()
    ((logp * mask).sum() + 0.1 * (entropy * mask).sum()).backward()
    grads = torch.cat([p.grad.flatten() for p in model.parameters() if p.grad is not None])
    return logp.detach() * mask, entropy.detach() * mask, grads


def test_shared_prompts_give_the_logprobs_entropies_and_gradients_of_one_forward(
    model: PreTrainedModel,
) -> None:
    keep_padding(model)  # the cache-sharing path (trainer/models/packed_forward.py has its own tests)
    batch = groups()
    assert _shared_prompts(model, batch[0], batch[1]) is not None  # the shared path is the one under test

    expected = values_and_grads(model, one_forward, *batch)
    got = values_and_grads(model, lambda m, p, pm, c, cm: completion_logprobs(m, p, pm, c, cm, 1.0), *batch)

    torch.testing.assert_close(got[0], expected[0], rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(got[1], expected[1], rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(got[2], expected[2], rtol=1e-4, atol=1e-6)
    assert expected[2].abs().max() > 0


def test_a_single_completion_token_needs_only_the_prompt_pass(model: PreTrainedModel) -> None:
    prompt_ids, prompt_mask, completion_ids, completion_mask = groups(T=1)

    got = completion_logprobs(model, prompt_ids, prompt_mask, completion_ids, completion_mask, 1.0)

    expected = one_forward(model, prompt_ids, prompt_mask, completion_ids, completion_mask)
    torch.testing.assert_close(got[0], expected[0], rtol=1e-5, atol=1e-5)


def test_rows_with_distinct_prompts_take_the_one_forward_path(model: PreTrainedModel) -> None:
    prompt_ids, prompt_mask, completion_ids, completion_mask = groups(G=1)

    keep_padding(model)
    assert _shared_prompts(model, prompt_ids, prompt_mask) is None
    got = completion_logprobs(model, prompt_ids, prompt_mask, completion_ids, completion_mask, 1.0)
    torch.testing.assert_close(
        got[0], one_forward(model, prompt_ids, prompt_mask, completion_ids, completion_mask)[0]
    )


def test_prompts_differing_only_in_padding_ids_count_as_one(model: PreTrainedModel) -> None:
    prompt_ids, prompt_mask, *_ = groups(G=4)

    shared = _shared_prompts(model, prompt_ids, prompt_mask)

    assert shared is not None and len(shared[0]) == 3
    assert shared[2].tolist() == [r for r in shared[2][::4].tolist() for _ in range(4)]


def test_dropout_in_training_and_activation_checkpointing_keep_the_one_forward_path(
    random_model_dir: Path,
) -> None:
    dropout = AutoModelForCausalLM.from_pretrained(random_model_dir, attention_dropout=0.1)
    assert not _can_share(dropout.train())  # one dropout mask would serve a whole group
    assert _can_share(dropout.eval())  # no dropout without training mode
    checkpointed = AutoModelForCausalLM.from_pretrained(random_model_dir).train()
    enable_activation_checkpointing(checkpointed)
    assert not _can_share(checkpointed)  # it runs without a cache


@pytest.mark.parametrize("on", [True, False])
@pytest.mark.parametrize("knob", ["shared_prompt_forward", "packed_forward"])
def test_the_training_forward_settings_reach_the_policy_and_its_reference(
    random_model_dir: Path, tmp_path: Path, knob: str, on: bool
) -> None:
    from tests.trainer.loop_helpers import tiny_config
    from trainer.step.run_setup import build_run

    config = tiny_config(random_model_dir, tmp_path, algorithm={"beta": 0.04}, training={knob: on})
    run = build_run(config, log=lambda _: None)
    assert run.ref_model is not None
    taken = _can_share if knob == "shared_prompt_forward" else can_pack
    assert [taken(m) for m in (run.model, run.ref_model)] == [on, on]
