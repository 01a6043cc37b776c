"""trainer/distributed/fsdp.py without torchrun: config validation, layer discovery, and the full-state-dict layout on a
1-process gloo group (the 2-process runs are in test_fsdp_runs.py)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import torch
from torch import nn
from transformers import AutoModelForCausalLM, PreTrainedModel

from tests.trainer.loop_helpers import tiny_config
from trainer.config import config_from_dict
from trainer.distributed.fsdp import (
    decoder_layers,
    full_model_state_dict,
    full_optimizer_state_dict,
    gathered,
    is_sharded,
    load_full_optimizer_state_dict,
    shard_model,
)
from trainer.errors import ConfigError


def _fsdp(**sections: dict[str, Any]) -> dict[str, Any]:
    data: dict[str, Any] = {"training": {"num_processes": 2, "prompts_per_step": 4, "fsdp": True}}
    for section, values in sections.items():
        data.setdefault(section, {}).update(values)
    return data


def test_fsdp_validates_with_two_processes() -> None:
    assert config_from_dict(_fsdp()).training.fsdp


def test_fsdp_needs_at_least_two_processes() -> None:
    with pytest.raises(ConfigError, match=r"set training.num_processes to 2 or more"):
        config_from_dict({"training": {"fsdp": True}})


def test_fsdp_refuses_lora_and_says_which_to_drop() -> None:
    with pytest.raises(ConfigError, match=r"use LoRA without fsdp, or fsdp without LoRA"):
        config_from_dict(_fsdp(model={"lora_r": 8}))


def test_fsdp_refuses_the_vllm_engine() -> None:
    with pytest.raises(ConfigError, match=r"fsdp with rollout.engine 'vllm' is not supported"):
        config_from_dict(_fsdp(rollout={"engine": "vllm"}))


@pytest.mark.parametrize(
    "budget",
    [
        {"allocator": "early_abandon"},
        {"allocator": "sara"},
        {"allocator": "vigor"},
        {"dynamic_sampling": True},
    ],
)
def test_fsdp_takes_groups_of_different_sizes(budget: dict[str, object]) -> None:
    """Groups of different sizes give the processes different numbers of micro-batches; a sharded update
    exchanges weights in every one, so the idle ranks run zero-loss passes (trainer/step/optimize.py) and the
    config is accepted (tests/trainer/test_mode_matrix.py checks the result against one process)."""
    config = config_from_dict(_fsdp(budget=budget))
    assert config.training.fsdp


class _Rows:
    """The two fields of a RolloutBatch an idle pass reads (and its length)."""

    def __init__(self, rows: int) -> None:
        self.prompt_ids = torch.tensor([[5, 6, 7]] * rows, dtype=torch.long)
        self.completion_ids = torch.tensor([[8, 9]] * rows, dtype=torch.long)

    def __len__(self) -> int:
        return len(self.prompt_ids)


@pytest.mark.parametrize("rows", [1, 0])
def test_idle_passes_run_the_model_and_add_no_gradient(random_model_dir: Path, rows: int) -> None:
    """What a rank with fewer micro-batches runs: forward/backward passes whose loss is exactly 0 (from its own
    first row, or a 1-token dummy when it has none)."""
    from transformers import AutoModelForCausalLM

    from trainer.step.optimize import _idle_passes

    model = AutoModelForCausalLM.from_pretrained(random_model_dir)
    calls: list[int] = []
    model.register_forward_hook(lambda module, args, out: calls.append(1))
    for p in model.parameters():
        p.grad = torch.full_like(p, 0.5)
    _idle_passes(model, _Rows(rows), 2)  # type: ignore[arg-type]
    assert len(calls) == 2
    assert all(torch.equal(p.grad, torch.full_like(p, 0.5)) for p in model.parameters())


class _Expert(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.proj = nn.Linear(4, 4)


class _Block(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.attn = nn.Linear(16, 16)
        self.experts = nn.ModuleList(_Expert() for _ in range(4))


class _MoE(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.embed = nn.Embedding(10, 16)
        self.blocks = nn.ModuleList(_Block() for _ in range(2))
        self.heads = nn.ModuleList([nn.Linear(16, 2), nn.ReLU()])  # mixed classes: not a block list


class FooDecoderLayer(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.proj = nn.Linear(4, 4)


class _NoList(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.first, self.second = FooDecoderLayer(), FooDecoderLayer()


def _load(model_dir: Path) -> PreTrainedModel:
    model: PreTrainedModel = AutoModelForCausalLM.from_pretrained(model_dir, dtype=torch.float32)
    return model


def test_decoder_layers_of_a_causal_lm_are_its_block_list(random_model_dir: Path) -> None:
    model = _load(random_model_dir)
    assert decoder_layers(model) == list(model.model.layers)  # type: ignore[union-attr]


def test_decoder_layers_prefer_the_block_list_over_a_nested_expert_list() -> None:
    model = _MoE()
    assert decoder_layers(model) == list(model.blocks)


def test_decoder_layers_fall_back_to_decoder_layer_class_names() -> None:
    model = _NoList()
    assert decoder_layers(model) == [model.first, model.second]


def test_an_unsharded_model_passes_through_gathered_untouched() -> None:
    model = _MoE()
    assert not is_sharded(model)
    with gathered(model):
        assert not is_sharded(model)


@pytest.fixture
def one_process_group(tmp_path: Path) -> Iterator[None]:
    """A 1-rank gloo group in this process: FSDP then shards over one rank, enough to check layouts."""
    import torch.distributed as dist

    dist.init_process_group("gloo", init_method=f"file://{tmp_path / 'pg'}", rank=0, world_size=1)
    try:
        yield
    finally:
        dist.destroy_process_group()


def _one_step(model: nn.Module, optimizer: torch.optim.Optimizer) -> None:
    ids = torch.arange(12).reshape(2, 6) % 50
    model(input_ids=ids, labels=ids).loss.backward()
    optimizer.step()
    optimizer.zero_grad(set_to_none=True)


def _adamw(model: nn.Module) -> torch.optim.Optimizer:
    return torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=1e-2)


def _assert_same_optimizer_state(got: dict[str, Any], want: dict[str, Any]) -> None:
    assert got["param_groups"] == want["param_groups"] and got["state"].keys() == want["state"].keys()
    for index, entry in want["state"].items():
        assert got["state"][index].keys() == entry.keys()
        for name, value in entry.items():
            torch.testing.assert_close(got["state"][index][name], value)


@pytest.mark.usefixtures("one_process_group")
def test_full_state_dicts_have_the_unsharded_layout_and_load_back(random_model_dir: Path) -> None:
    plain, sharded = _load(random_model_dir), shard_model(_load(random_model_dir), "cpu")
    plain_opt, sharded_opt = _adamw(plain), _adamw(sharded)
    _one_step(plain, plain_opt)
    _one_step(sharded, sharded_opt)
    assert is_sharded(sharded)

    weights = full_model_state_dict(sharded)
    reference = plain.state_dict()
    assert weights.keys() == reference.keys()
    for k in reference:
        torch.testing.assert_close(weights[k], reference[k])
    # tied embeddings: one tensor under both names, so save_pretrained drops the alias as it does unsharded
    assert weights["lm_head.weight"] is weights["model.embed_tokens.weight"]
    _assert_same_optimizer_state(full_optimizer_state_dict(sharded, sharded_opt), plain_opt.state_dict())

    fresh = shard_model(_load(random_model_dir), "cpu")
    fresh_opt = _adamw(fresh)
    load_full_optimizer_state_dict(fresh, fresh_opt, plain_opt.state_dict())
    _assert_same_optimizer_state(full_optimizer_state_dict(fresh, fresh_opt), plain_opt.state_dict())


@pytest.mark.usefixtures("one_process_group")
def test_gathered_keeps_the_weights_whole_across_forwards_and_reshards_on_exit(
    random_model_dir: Path,
) -> None:
    from torch.distributed.tensor import DTensor

    model = shard_model(_load(random_model_dir), "cpu")
    layer = decoder_layers(model)[0]
    ids = torch.arange(6).reshape(1, 6)

    def whole() -> bool:
        return not isinstance(next(layer.parameters()), DTensor)

    assert not whole()
    with torch.no_grad(), gathered(model):
        assert whole()
        model(input_ids=ids)
        with gathered(model):  # nested: the inner block neither gathers again nor frees
            model(input_ids=ids)
        assert whole()  # not freed by the forwards or the inner block
    assert not whole()
    with torch.no_grad():
        model(input_ids=ids)
    assert not whole()  # the layers free their weights after each forward again


def test_tiny_config_accepts_fsdp_for_the_run_tests(random_model_dir: Path, tmp_path: Path) -> None:
    cfg = tiny_config(
        random_model_dir, tmp_path, training={"num_processes": 2, "prompts_per_step": 4, "fsdp": True}
    )
    assert cfg.training.fsdp and cfg.seeds_per_prompt
