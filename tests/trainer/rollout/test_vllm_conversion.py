"""Our side of the vLLM engine, tested without vLLM: request grouping, output conversion, weight names.

The shapes below mirror vLLM's RequestOutput / CompletionOutput / Logprob (only the attributes the
engine reads). The real engine (vLLM's CPU build) is tested in test_vllm_real.py.
"""

from __future__ import annotations

import math
import sys
from dataclasses import dataclass, field

import pytest
import torch
from transformers import AutoTokenizer

from trainer.errors import ConfigError
from trainer.rollout.base import SamplingParams
from trainer.rollout.vllm_engine import (
    GeneratedRow,
    PromptRequest,
    group_requests,
    outputs_to_rows,
    rows_to_batch,
    sampling_seed,
    to_vllm_sampling_kwargs,
)
from trainer.rollout.weight_files import WeightFiles, checkpoint_tensors, checkpoint_weight_name


@dataclass
class Logprob:
    logprob: float
    rank: int | None = None
    decoded_token: str | None = None


@dataclass
class Completion:
    token_ids: list[int]
    logprobs: list[dict[int, Logprob]] | None
    finish_reason: str | None
    text: str = ""


@dataclass
class Request:
    prompt_token_ids: list[int]
    outputs: list[Completion] = field(default_factory=list)


def test_consecutive_repeats_become_one_request_with_n() -> None:
    prompts = ["a", "a", "a", "b", "b", "a"]
    assert group_requests(prompts) == [PromptRequest("a", 3), PromptRequest("b", 2), PromptRequest("a", 1)]
    assert group_requests([]) == []


def test_outputs_flatten_in_prompt_order_with_finish_reasons_and_logprobs() -> None:
    requests = [PromptRequest("p", 2), PromptRequest("q", 1)]
    outputs = [
        Request(
            [1, 2],
            [
                Completion([7, 8, 0], [{7: Logprob(-0.5)}, {8: Logprob(-1.0)}, {0: Logprob(-0.1)}], "stop"),
                Completion([9], [{9: Logprob(-2.0)}], "length"),
            ],
        ),
        Request([3], [Completion([4, 5], None, "length")]),
    ]
    rows = outputs_to_rows(outputs, requests)
    assert [r.completion_ids for r in rows] == [[7, 8, 0], [9], [4, 5]]
    assert [r.prompt_ids for r in rows] == [[1, 2], [1, 2], [3]]
    assert [r.finish_reason for r in rows] == ["eos", "length", "length"]
    assert rows[0].sampler_logprobs == [-0.5, -1.0, -0.1]
    assert all(math.isnan(x) for x in rows[2].sampler_logprobs)


def test_outputs_that_do_not_match_the_requests_are_refused() -> None:
    with pytest.raises(RuntimeError, match="2 completions for a request with n=1"):
        outputs_to_rows([Request([1], [Completion([2], None, "stop")] * 2)], [PromptRequest("p", 1)])
    with pytest.raises(RuntimeError, match="finish_reason 'abort'"):
        outputs_to_rows([Request([1], [Completion([2], None, "abort")])], [PromptRequest("p", 1)])


def test_rows_pad_like_the_hf_engine(warm_model_dir) -> None:  # type: ignore[no-untyped-def]
    tok = AutoTokenizer.from_pretrained(warm_model_dir)
    pad = int(tok.pad_token_id if tok.pad_token_id is not None else tok.eos_token_id)
    ids = tok("12+3=", add_special_tokens=False)["input_ids"]
    rows = [
        GeneratedRow([*ids, *ids], [ids[0]], [-0.3], "eos"),
        GeneratedRow(ids, [ids[1], ids[2], ids[3]], [-0.1, -0.2, -0.3], "length"),
    ]
    batch, sampler = rows_to_batch(rows, pad, tok, torch.device("cpu"))
    L = 2 * len(ids)
    assert batch.prompt_ids.shape == (2, L) and batch.completion_ids.shape == (2, 3)
    assert batch.prompt_mask[1].tolist() == [0] * len(ids) + [1] * len(ids)  # left-padded
    assert batch.prompt_ids[1, : len(ids)].tolist() == [pad] * len(ids)
    assert batch.completion_mask.tolist() == [[1, 0, 0], [1, 1, 1]]  # right-padded
    assert batch.completion_ids[0, 1:].tolist() == [pad, pad]
    assert batch.lengths.tolist() == [1, 3]
    assert batch.finish_reasons == ["eos", "length"]
    assert batch.texts == tok.batch_decode([[ids[0]], ids[1:4]], skip_special_tokens=True)
    assert sampler.tolist()[0] == pytest.approx([-0.3, 0.0, 0.0])


def test_sampling_kwargs_and_seed() -> None:
    kw = to_vllm_sampling_kwargs(
        SamplingParams(max_new_tokens=16, temperature=0.7, top_p=0.9, top_k=0), n=8, seed=5
    )
    assert kw == {
        "n": 8,
        "temperature": 0.7,
        "top_p": 0.9,
        "top_k": -1,
        "max_tokens": 16,
        "logprobs": 0,
        "seed": 5,
        "skip_special_tokens": True,
    }
    g1, g2 = torch.Generator().manual_seed(3), torch.Generator().manual_seed(3)
    assert sampling_seed(g1) == sampling_seed(g2)  # a seeded run asks vLLM for the same seeds


def test_weight_names_match_checkpoint_names() -> None:
    assert (
        checkpoint_weight_name("model.layers.0.self_attn.q_proj.weight")
        == "model.layers.0.self_attn.q_proj.weight"
    )
    assert checkpoint_weight_name("_orig_mod.model.norm.weight") == "model.norm.weight"
    assert checkpoint_weight_name("module.lm_head.weight") == "lm_head.weight"
    assert (
        checkpoint_weight_name("model.layers.1._checkpoint_wrapped_module.mlp.up_proj.weight")
        == "model.layers.1.mlp.up_proj.weight"
    )
    assert (
        checkpoint_weight_name("model.layers.0.self_attn.q_proj.base_layer.weight")
        == "model.layers.0.self_attn.q_proj.weight"
    )


def test_weight_files_are_versioned_atomic_and_carry_the_tied_output_layer(
    random_model_dir, tmp_path
) -> None:  # type: ignore[no-untyped-def]
    from safetensors.torch import load_file
    from transformers import AutoModelForCausalLM

    model = AutoModelForCausalLM.from_pretrained(random_model_dir)
    tensors = checkpoint_tensors(model)
    assert "lm_head.weight" in tensors  # tied: written out, or vLLM would keep its old output layer
    files = WeightFiles(tmp_path / "w", keep=2)
    for version in (1, 2, 3):
        path = files.write(model, version)
    assert files.versions() == [2, 3] and path.name == "v000003"
    assert WeightFiles.version_of(path) == 3
    assert not list((tmp_path / "w").glob(".tmp-*"))
    loaded = load_file(str(path / "model.safetensors"))
    assert set(loaded) == set(tensors)
    assert all(torch.equal(loaded[k], tensors[k]) for k in tensors)
    with pytest.raises(ValueError, match="not a weight-file version directory"):
        WeightFiles.version_of(tmp_path / "elsewhere")


def test_missing_vllm_gives_an_actionable_error(warm_model_dir, tmp_path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    from tests.trainer.loop_helpers import tiny_config
    from trainer.step.run_setup import build_run

    monkeypatch.setitem(sys.modules, "vllm", None)  # as on a machine without it: `import vllm` fails
    cfg = tiny_config(warm_model_dir, tmp_path, rollout={"engine": "vllm"})
    with pytest.raises(ConfigError, match=r"make install.*vllm_mode .server."):
        build_run(cfg, log=lambda _: None)


def test_a_lora_policy_is_pushed_merged_under_the_base_checkpoint_s_names(random_model_dir) -> None:  # type: ignore[no-untyped-def]
    from transformers import AutoModelForCausalLM

    from trainer.models.lora import apply_lora

    base = checkpoint_tensors(AutoModelForCausalLM.from_pretrained(random_model_dir))
    lora = apply_lora(
        AutoModelForCausalLM.from_pretrained(random_model_dir),
        r=4,
        alpha=8,
        dropout=0.0,
        target_modules="all-linear",
    )
    with torch.no_grad():
        for name, p in lora.named_parameters():
            if "lora_B" in name:
                p.fill_(0.01)  # a trained adapter: B != 0
    merged = checkpoint_tensors(lora)
    assert set(merged) == set(base)
    q = "model.layers.0.self_attn.q_proj.weight"
    assert not torch.equal(merged[q], base[q])  # the adapter's delta is in the pushed weight
    assert torch.equal(merged["model.norm.weight"], base["model.norm.weight"])


def test_weight_files_left_by_an_earlier_run_are_cleared_not_kept_over_this_run_s(
    random_model_dir, tmp_path
) -> None:  # type: ignore[no-untyped-def]
    from transformers import AutoModelForCausalLM

    model = AutoModelForCausalLM.from_pretrained(random_model_dir)
    earlier = WeightFiles(tmp_path / "w")
    for version in (39, 40):
        earlier.write(model, version)
    files = WeightFiles(tmp_path / "w")  # the next run in the same output directory
    path = files.write(model, 1)
    assert files.versions() == [1] and (path / "model.safetensors").is_file()


def test_a_rollout_server_s_cpu_list_is_parsed_or_refused() -> None:
    from trainer.rollout.server_process import parse_cpus

    assert parse_cpus("1") == {1} and parse_cpus("0,2") == {0, 2} and parse_cpus("4-7") == {4, 5, 6, 7}
    for bad in ("", "a", "1-", "0-100000"):
        with pytest.raises(ConfigError, match="CPU list"):
            parse_cpus(bad)
