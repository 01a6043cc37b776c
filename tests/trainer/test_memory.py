"""Memory planning (training.memory_budget_gb, trainer/models/memory.py): the KV-cache formula against a real cache,
the probe's side effects, sizing decisions, and that a budgeted run trains exactly like the same run with the
chosen micro-batch size set by hand."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file
from transformers import AutoModelForCausalLM, AutoTokenizer, Qwen2Config, Qwen2ForCausalLM

from tests.trainer.loop_helpers import Steps, tiny_config
from trainer.data import load_samples
from trainer.errors import ConfigError
from trainer.models.checkpoint import latest_checkpoint
from trainer.models.memory import HEADROOM, kv_bytes_per_token, longest_prompt_tokens, plan_memory
from trainer.models.transformers_compat import output_cache
from trainer.sinks import NullSink
from trainer.step.loop import train
from trainer.step.run_setup import build_run


def _kv_cache_bytes(model: torch.nn.Module, tokens: int) -> int:
    out = model(input_ids=torch.zeros(1, tokens, dtype=torch.long), use_cache=True)
    cache = output_cache(out)
    total = 0
    for layer in cache.layers:
        total += (
            layer.keys.numel() * layer.keys.element_size()
            + layer.values.numel() * layer.values.element_size()
        )
    return total


@pytest.mark.parametrize("kv_heads", [4, 1])
def test_kv_bytes_per_token_matches_a_real_cache(kv_heads: int) -> None:
    cfg = Qwen2Config(
        vocab_size=50,
        hidden_size=64,
        intermediate_size=128,
        num_hidden_layers=3,
        num_attention_heads=4,
        num_key_value_heads=kv_heads,
    )
    model = Qwen2ForCausalLM(cfg).eval()
    with torch.no_grad():
        assert kv_bytes_per_token(model) * 7 == _kv_cache_bytes(model, 7)
    assert kv_bytes_per_token(model.to(torch.bfloat16)) * 2 == kv_bytes_per_token(model.float())


def test_longest_prompt_is_measured_in_tokens(random_model_dir: Path) -> None:
    cfg = tiny_config(random_model_dir, Path("unused"))
    samples = load_samples(cfg.data)
    tok = AutoTokenizer.from_pretrained(random_model_dir)
    from trainer.data.templates import render_prompt

    every = max(
        len(tok(render_prompt(s, cfg.data, tok), add_special_tokens=False)["input_ids"]) for s in samples
    )
    assert longest_prompt_tokens(samples, cfg, tok) == every


def _plan(model_dir: Path, budget: float, **rollout: object):  # type: ignore[no-untyped-def]
    cfg = tiny_config(
        model_dir,
        Path("unused"),
        training={"memory_budget_gb": budget, "micro_batch_size": 512},
        rollout={"max_completion_length": 24, "generation_batch_size": 4096, **rollout},
    )
    model = AutoModelForCausalLM.from_pretrained(model_dir)
    tok = AutoTokenizer.from_pretrained(model_dir)
    return model, plan_memory(cfg, model, tok, load_samples(cfg.data), torch.device("cpu"))


def test_plan_fits_the_budget_and_grows_with_it(random_model_dir: Path) -> None:
    sizes = []
    for budget in (0.02, 0.05, 0.2):
        _, plan = _plan(random_model_dir, budget)
        usable = budget * 2**30 * HEADROOM
        assert plan.update_peak_bytes(plan.micro_batch_size) <= usable
        assert plan.generation_peak_bytes(plan.generation_batch_size) <= usable
        # the next row would not have fitted (unless capped by the configured maximum)
        assert plan.micro_batch_size == 512 or plan.update_peak_bytes(plan.micro_batch_size + 1) > usable
        assert plan.generation_batch_size % 8 == 0  # whole GRPO groups per generation batch
        assert plan.metrics()["perf/micro_batch_size"] == plan.micro_batch_size
        sizes.append((plan.micro_batch_size, plan.generation_batch_size))
    assert sizes == sorted(sizes) and sizes[0] < sizes[-1]


def test_probe_leaves_no_gradients_and_no_rng_trace(random_model_dir: Path) -> None:
    rng = torch.get_rng_state()
    model, plan = _plan(random_model_dir, 0.05)
    assert all(p.grad is None for p in model.parameters())
    assert torch.equal(torch.get_rng_state(), rng)
    assert plan.update_bytes_per_row > 0 and not plan.measured  # CPU: estimated


def test_a_budget_too_small_says_what_to_change(random_model_dir: Path) -> None:
    with pytest.raises(ConfigError, match=r"memory_budget_gb = 0\.0001 .*gradient_checkpointing"):
        _plan(random_model_dir, 0.0001)


def test_budgeted_run_trains_like_the_same_micro_batch_set_by_hand(
    random_model_dir: Path, tmp_path: Path
) -> None:
    common = {"max_steps": 2, "prompts_per_step": 2, "micro_batch_size": 16}
    probe = tiny_config(
        random_model_dir,
        tmp_path / "probe",
        training={**common, "memory_budget_gb": 1.0},
        rollout={"max_completion_length": 6},
        model={"device": "cpu"},
    )
    plan = build_run(probe, log=lambda m: None).memory_plan
    assert plan is not None
    five_rows = plan.update_peak_bytes(5) / HEADROOM / 2**30 + 1e-6  # a budget that fits 5 rows, not 6
    budgeted = probe.model_copy(
        update={
            "training": probe.training.model_copy(update={"memory_budget_gb": five_rows}),
            "checkpoint": probe.checkpoint.model_copy(update={"output_dir": str(tmp_path / "budget")}),
        }
    )
    run = build_run(budgeted, log=lambda m: None)
    chosen = run.micro_batch_size
    assert chosen == 5  # the step's 16 completions take 4 micro-batches
    del run
    sink = Steps()
    train(budgeted, sink, log=lambda m: None)
    assert sink.reports[-1].metrics["perf/micro_batch_size"] == chosen
    assert sink.reports[-1].metrics["perf/train_tokens_per_s"] > 0
    by_hand = tiny_config(
        random_model_dir,
        tmp_path / "hand",
        training={**common, "micro_batch_size": chosen},
        rollout={"max_completion_length": 6},
        model={"device": "cpu"},
    )
    train(by_hand, NullSink(), log=lambda m: None)
    a = load_file(latest_checkpoint(tmp_path / "budget") / "model.safetensors")  # type: ignore[operator]
    b = load_file(latest_checkpoint(tmp_path / "hand") / "model.safetensors")  # type: ignore[operator]
    assert a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)


@pytest.mark.gpu
@pytest.mark.skipif(
    not torch.cuda.is_available(), reason="needs a CUDA GPU: the allocator-measured plan is checked there"
)
def test_on_cuda_the_real_peak_stays_within_the_budget(tmp_path: Path) -> None:
    from trainer.models.tiny_model import build_tiny_model

    # Activations dominate: 128 completions of up to 128 tokens through 6 layers of width 512 need ~3 GiB
    # in one micro-batch, against ~0.1 GiB of weights and optimizer state.
    model_dir = build_tiny_model(tmp_path / "model", hidden=512, layers=6, heads=8)
    budget = 1.0
    cfg = tiny_config(
        model_dir,
        tmp_path / "run",
        model={"device": "cuda", "dtype": "bfloat16"},
        training={
            "max_steps": 2,
            "prompts_per_step": 16,
            "micro_batch_size": 128,
            "memory_budget_gb": budget,
        },
        rollout={"max_completion_length": 128, "generation_batch_size": 1024},
    )
    sink = Steps()
    train(cfg, sink, log=print)
    assert sink.reports[0].metrics["perf/micro_batch_size"] < 128
    for m in (r.metrics for r in sink.reports):
        assert m["perf/gen_peak_memory_gb"] <= budget and m["perf/update_peak_memory_gb"] <= budget, m


def test_gradient_checkpointing_trains_and_needs_less_memory_per_row(
    random_model_dir: Path, tmp_path: Path
) -> None:
    per_row = {}
    for checkpointing in (False, True):
        cfg = tiny_config(
            random_model_dir,
            tmp_path / str(checkpointing),
            model={"device": "cpu", "gradient_checkpointing": checkpointing},
            training={"memory_budget_gb": 1.0},
            rollout={"max_completion_length": 24},
        )
        run = build_run(cfg, log=lambda m: None)
        assert run.memory_plan is not None
        per_row[checkpointing] = run.memory_plan.update_bytes_per_row
    assert per_row[True] < per_row[False]
    sink = Steps()
    train(
        cfg, sink, log=lambda m: None
    )  # the checkpointed policy trains (activations recomputed in backward)
    assert len(sink.reports) == 2 and all(r.metrics["actor/grad_norm"] > 0 for r in sink.reports)
