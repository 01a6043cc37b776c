"""The hf engine's own decode steps (trainer/rollout/cached_decoder.py) give transformers' logits and samples."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from transformers import (
    AutoConfig,
    AutoModelForCausalLM,
    AutoTokenizer,
    GPT2Config,
    GPT2LMHeadModel,
    LlamaConfig,
    LlamaForCausalLM,
    PreTrainedModel,
    Qwen2Config,
    Qwen2ForCausalLM,
    Qwen3Config,
    Qwen3ForCausalLM,
)

from trainer.models.logprobs import prefill
from trainer.models.transformers_compat import cache_kwargs, output_cache
from trainer.rollout import HFRolloutEngine, RolloutBatch, SamplingParams, cached_decoder
from trainer.rollout.cached_decoder import decoder_for

SMALL = {
    "vocab_size": 64,
    "hidden_size": 32,
    "intermediate_size": 64,
    "num_hidden_layers": 2,
    "num_attention_heads": 4,
    "max_position_embeddings": 128,
    "pad_token_id": 0,
    "bos_token_id": 2,
    "eos_token_id": 1,
}


def _models() -> dict[str, PreTrainedModel]:
    torch.manual_seed(0)
    return {
        "llama, grouped-query attention": LlamaForCausalLM(LlamaConfig(**SMALL, num_key_value_heads=2)),
        "qwen2, biases": Qwen2ForCausalLM(Qwen2Config(**SMALL, num_key_value_heads=4)),
        "qwen3, per-head q/k norms": Qwen3ForCausalLM(
            Qwen3Config(**SMALL, num_key_value_heads=2, head_dim=8)
        ),
    }


def _transformers_step(
    model: PreTrainedModel, cache: object, tokens: torch.Tensor, positions: torch.Tensor, attn: torch.Tensor
) -> tuple[torch.Tensor, object]:
    """transformers' own decode step: (the new token's logits [B, V], the grown cache)."""
    step = model(
        input_ids=tokens[:, None],
        attention_mask=attn,
        position_ids=positions,
        use_cache=True,
        **cache_kwargs(cache),
    )
    return step.logits[:, -1], output_cache(step)


@pytest.mark.parametrize("matmuls", [False, True], ids=["elementwise", "matmuls"])
@pytest.mark.parametrize("name", sorted(_models()))
@torch.no_grad()
def test_each_decode_step_gives_transformers_logits(
    name: str, matmuls: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    if matmuls:  # the path of long contexts and big batches
        monkeypatch.setattr(cached_decoder, "ELEMENTWISE_LIMIT", 0)
    model = _models()[name].eval()
    decoder = decoder_for(model)
    assert decoder is not None
    ids = torch.tensor([[0, 0, 5, 9, 11], [3, 4, 5, 6, 7], [0, 8, 8, 2, 9]])  # left-padded
    mask = (ids != 0).long()
    rows = torch.tensor([0, 0, 1, 2, 2, 2])  # each prompt's completions share its prefill
    new = torch.tensor(
        [
            [12, 13, 14, 15],
            [16, 17, 18, 19],
            [20, 21, 22, 23],
            [24, 25, 26, 27],
            [28, 29, 30, 31],
            [1, 0, 0, 0],
        ]
    )
    _, past = prefill(model, ids, mask)
    assert decoder.start(past, rows, new.shape[1])
    _, theirs = prefill(model, ids, mask)
    theirs.reorder_cache(rows)
    attn, positions = mask[rows], mask[rows].sum(-1, keepdim=True)
    for t in range(new.shape[1]):
        attn = torch.cat([attn, torch.ones_like(attn[:, :1])], dim=1)
        ours = decoder.step(new[:, t], positions + t, attn)
        logits, theirs = _transformers_step(model, theirs, new[:, t], positions + t, attn)
        assert torch.allclose(ours, logits, atol=1e-5), (name, t)
    with pytest.raises(RuntimeError, match="cache is full"):
        decoder.step(new[:, 0], positions + 4, torch.cat([attn, torch.ones_like(attn[:, :1])], dim=1))


@torch.no_grad()
def test_finished_rows_leave_the_buffers_and_the_rest_keep_their_logits() -> None:
    model = _models()["llama, grouped-query attention"].eval()
    decoder = decoder_for(model)
    assert decoder is not None
    ids = torch.tensor([[0, 5, 9, 11], [3, 4, 5, 6]])
    mask = (ids != 0).long()
    rows = torch.tensor([0, 0, 0, 0, 1, 1, 1, 1])
    new = torch.randint(3, 60, (8, 5), generator=torch.Generator().manual_seed(0))
    # True: the row goes on after token t. Two rows end after token 0 (a quarter: the buffers shrink), one more
    # after token 1 (not yet a quarter of the six left), three more after token 2 (now they shrink again).
    alive = torch.ones(5, 8, dtype=torch.bool)
    alive[0:, [1, 6]] = False
    alive[1:, 2] = False
    alive[2:, [0, 3, 7]] = False
    _, past = prefill(model, ids, mask)
    assert decoder.start(past, rows, new.shape[1])
    _, theirs = prefill(model, ids, mask)
    theirs.reorder_cache(rows)
    attn, positions = mask[rows], mask[rows].sum(-1, keepdim=True)
    held = []
    for t in range(4):
        attn = torch.cat([attn, torch.ones_like(attn[:, :1])], dim=1)
        ours = decoder.step(new[:, t], positions + t, attn, alive[t])
        assert decoder.held is not None
        held.append(decoder.held.tolist())
        logits, theirs = _transformers_step(model, theirs, new[:, t], positions + t, attn)
        live = alive[t]
        assert torch.allclose(ours[live], logits[live], atol=1e-5), t
        assert not ours[~live].any()  # a finished row is not computed
    assert held == [[0, 2, 3, 4, 5, 7], [0, 2, 3, 4, 5, 7], [4, 5], [4, 5]]
    assert decoder.keys[0].shape[0] == 2


def _generate(model_dir: Path, cached: bool, tokens: int = 8, **params: object) -> RolloutBatch:
    model = AutoModelForCausalLM.from_pretrained(model_dir)
    engine = HFRolloutEngine(model, AutoTokenizer.from_pretrained(model_dir), cached_decoder=cached)
    assert (engine.decoder is not None) is cached
    prompts = [p for p in ["12+34=", "7+8=", "100+250="] for _ in range(4)]
    return engine.generate(prompts, SamplingParams(tokens, **params), torch.Generator().manual_seed(3))  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "params",
    [
        {},
        {"top_k": 5, "temperature": 0.7},
        {"batch_size": 5},
        {"tokens": 3 * cached_decoder.FIRST_ROOM},  # the cache grows twice
    ],
)
def test_the_engine_samples_the_same_completions_either_way(
    random_model_dir: Path, params: dict[str, object]
) -> None:
    ours, theirs = _generate(random_model_dir, True, **params), _generate(random_model_dir, False, **params)
    assert torch.equal(ours.completion_ids, theirs.completion_ids)
    if "tokens" in params:  # some completions ran past twice the first room
        assert int(ours.lengths.max()) > 2 * cached_decoder.FIRST_ROOM
    assert torch.equal(ours.completion_mask, theirs.completion_mask)
    assert ours.finish_reasons == theirs.finish_reasons and ours.texts == theirs.texts
    assert torch.allclose(ours.logprobs, theirs.logprobs, atol=1e-5)
    assert torch.allclose(ours.entropies, theirs.entropies, atol=1e-5)


def test_stop_strings_end_completions_the_same_either_way(random_model_dir: Path) -> None:
    batches = []
    for cached in (True, False):
        model = AutoModelForCausalLM.from_pretrained(random_model_dir)
        tokenizer = AutoTokenizer.from_pretrained(random_model_dir)
        engine = HFRolloutEngine(model, tokenizer, cached_decoder=cached)
        contexts = [tokenizer.encode("1+1=", add_special_tokens=False)] * 6
        batches.append(
            engine.generate_from_ids(
                contexts, SamplingParams(10), torch.Generator().manual_seed(1), stop=["1", "2"]
            )
        )
    assert torch.equal(batches[0].completion_ids, batches[1].completion_ids)
    assert batches[0].finish_reasons == batches[1].finish_reasons


def test_other_layouts_keep_transformers_forward(random_model_dir: Path) -> None:
    gpt2 = GPT2LMHeadModel(GPT2Config(vocab_size=64, n_embd=32, n_layer=1, n_head=2, n_positions=64))
    assert decoder_for(gpt2) is None
    config = AutoConfig.from_pretrained(random_model_dir)
    config.use_sliding_window, config.sliding_window = True, 8
    config.layer_types = ["sliding_attention"] * config.num_hidden_layers
    assert decoder_for(AutoModelForCausalLM.from_config(config)) is None
    assert decoder_for(AutoModelForCausalLM.from_pretrained(random_model_dir)) is not None
