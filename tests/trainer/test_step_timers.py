"""A step reports where its time went (perf/<stage>_s, the update's parts), and the cheap checks behind the
update and the sampler behave as the slower ones they replaced."""

from __future__ import annotations

from pathlib import Path

import torch
from transformers import AutoModelForCausalLM, AutoTokenizer

from tests.trainer.loop_helpers import Steps, tiny_config
from trainer.rollout.base import SamplingParams
from trainer.rollout.hf_engine import HFRolloutEngine
from trainer.step.loop import train
from trainer.step.optimize import _non_finite_parameters
from trainer.step.step import STAGES

UPDATE_PARTS = ("perf/update_forward_s", "perf/update_backward_s", "perf/optimizer_s")


def test_every_stage_and_the_update_parts_are_reported_and_add_up(
    random_model_dir: Path, tmp_path: Path
) -> None:
    steps = Steps()

    train(tiny_config(random_model_dir, tmp_path / "out"), steps, log=lambda m: None)

    for report in steps.reports:
        m = report.metrics
        stages = [m[f"perf/{name}_s"] for name in STAGES]
        assert all(s >= 0 for s in stages)
        assert sum(stages) <= report.elapsed_s  # the stages are disjoint parts of the step
        assert m["perf/collect_s"] >= m["perf/gen_s"] + m["perf/verify_s"]
        assert all(m[k] > 0 for k in UPDATE_PARTS)
        assert sum(m[k] for k in UPDATE_PARTS) <= m["perf/update_policy_s"]


def test_the_weight_check_counts_exactly_the_tensors_holding_nan_or_inf() -> None:
    nan, inf = torch.ones(3, 4), torch.ones(5)
    nan[1, 2], inf[0] = float("nan"), -float("inf")
    huge = torch.full((4,), 1e30)  # finite, though its L2 norm overflows float32
    half = torch.ones(8, dtype=torch.float16) * 6e4  # finite, though its norm overflows float16

    assert _non_finite_parameters([torch.ones(2), nan, inf, huge, half, torch.empty(0)], None) == 2
    assert _non_finite_parameters([huge, half, torch.zeros(3)], None) == 0
    assert _non_finite_parameters([], None) == 0


def test_sampling_runs_without_dropout_and_leaves_the_model_in_its_mode(random_model_dir: Path) -> None:
    model = AutoModelForCausalLM.from_pretrained(random_model_dir).train()
    tokenizer = AutoTokenizer.from_pretrained(random_model_dir)
    modes: list[bool] = []
    model.model.layers[0].register_forward_pre_hook(lambda module, args: modes.append(module.training))
    engine = HFRolloutEngine(model, tokenizer)

    engine.generate(["1+2=", "3+4="], SamplingParams(4, 1.0, 1.0, 0, 8), torch.Generator().manual_seed(0))

    assert modes and not any(modes)
    assert model.training and all(m.training for m in model.modules())
