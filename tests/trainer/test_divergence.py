"""A diverged run stops with TrainingDiverged naming the step, its figures and the fix, instead of a raw
torch error, and writes no checkpoint of broken weights."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file

from tests.trainer.loop_helpers import Steps, tiny_config
from trainer.config import ExperimentConfig
from trainer.errors import RLVRError, TrainingDiverged
from trainer.sinks import NullSink
from trainer.step.loop import train


class StepsAndErrors(Steps):
    """Step reports and the error messages the sink is given (the worker's sink stores them on the run)."""

    def __init__(self) -> None:
        super().__init__()
        self.errors: list[str] = []

    def on_error(self, message: str, traceback_text: str) -> None:
        self.errors.append(message)


def with_learning_rate(config: ExperimentConfig, lr: float) -> ExperimentConfig:
    """The config with ``lr`` set past validation (which may cap it): what a trainer meets when a config
    reaches it some other way, e.g. from code."""
    return config.model_copy(update={"training": config.training.model_copy(update={"learning_rate": lr})})


def checkpoint_steps_and_finiteness(out_dir: Path) -> dict[int, bool]:
    found = {}
    for weights in sorted(out_dir.glob("checkpoints/step-*/*.safetensors")):
        step = int(weights.parent.name.removeprefix("step-"))
        found[step] = all(bool(torch.isfinite(t.float()).all()) for t in load_file(str(weights)).values())
    return found


def test_a_learning_rate_of_1e30_stops_the_run_with_the_cause_and_the_fix(
    random_model_dir: Path, tmp_path: Path
) -> None:
    config = tiny_config(
        random_model_dir, tmp_path / "out", training={"max_steps": 4}, checkpoint={"save_steps": 1}
    )
    steps = StepsAndErrors()

    with pytest.raises(TrainingDiverged) as raised:
        train(with_learning_rate(config, 1e30), steps, log=lambda m: None)

    message = str(raised.value)
    assert isinstance(raised.value, RLVRError)  # shown as it is by the CLI and on the run page
    grad_norm = steps.reports[0].metrics[
        "actor/grad_norm"
    ]  # step 1 is finite; its update blows the weights up
    # Step 2 meets the blown-up weights while sampling, in its loss or in its backward pass, whichever the
    # prompts reach first; each names the step and the learning rate.
    assert re.match(
        r"Training diverged: (the sampling probabilities became NaN or infinite at step 2 \(grad norm "
        + re.escape(f"{grad_norm:.3g}")
        + r" before clipping at step 1\)|the (gradient norm|loss) became nan at step 2 "
        r"\(grad norm nan before clipping\)): the learning rate 1e\+30 is far too high for full fine-tuning of ",
        message,
    ), message
    assert (
        f"{random_model_dir}; lower training.learning_rate (typical 1e-6..1e-5 for full fine-tuning, 1e-4 for LoRA)"
        in message
    )
    assert "keep training.max_grad_norm set (it is 1)" in message
    assert steps.errors == [message]  # what the worker stores as the run's failure message
    assert [r.step for r in steps.reports] == [1]
    assert checkpoint_steps_and_finiteness(tmp_path / "out") == {1: True}  # nothing saved at or after step 2


def test_float16_weights_that_become_nan_stop_the_run_before_they_are_saved(
    random_model_dir: Path, tmp_path: Path
) -> None:
    # A config validation accepts: float16 AdamW at lr 1 turns weights NaN in the second update.
    config = tiny_config(
        random_model_dir,
        tmp_path / "out",
        model={"name_or_path": str(random_model_dir), "dtype": "float16"},
        training={"max_steps": 4, "learning_rate": 1.0},
        checkpoint={"save_steps": 1},
    )
    steps = Steps()

    with pytest.raises(TrainingDiverged) as raised:
        train(config, steps, log=lambda m: None)

    message = str(raised.value)
    assert message.startswith("Training diverged: the optimizer step made "), message
    assert "weight tensor(s) NaN or infinite at step 2 (grad norm " in message
    assert "the learning rate 1 is far too high" in message
    assert "train in bfloat16 (model.dtype: bfloat16, or model.autocast_bf16)" in message
    assert [r.step for r in steps.reports] == [1]
    saved = checkpoint_steps_and_finiteness(tmp_path / "out")
    assert saved == {1: True}, saved  # the NaN weights of step 2 were never written


def test_the_hint_says_clipping_is_off_when_max_grad_norm_is_0(
    random_model_dir: Path, tmp_path: Path
) -> None:
    config = tiny_config(random_model_dir, tmp_path / "out", training={"max_steps": 3, "max_grad_norm": 0.0})
    with pytest.raises(TrainingDiverged) as raised:
        train(with_learning_rate(config, 1e30), NullSink(), log=lambda m: None)
    assert "set training.max_grad_norm (e.g. 1.0): gradient clipping is off" in str(raised.value)
