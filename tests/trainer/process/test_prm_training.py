"""Training a PRM: the loss is read at step ends only, a run is deterministic on a CPU, stops when asked, and a
Math-Shepherd file with a bad line trains a folder through ``rlvr train-prm``."""

from __future__ import annotations

import json
import math
import random
from pathlib import Path

import pytest
import torch

from trainer.cli import main
from trainer.errors import DataError
from trainer.process.prm_config import PRMTrainingConfig
from trainer.process.prm_training import (
    METADATA_FILE,
    PRMTrainingStopped,
    file_labels,
    held_out_measures,
    step_end_loss,
    step_targets,
    train_prm,
)
from trainer.process.step_labels import StepExample


def test_the_loss_is_the_cross_entropy_at_labelled_step_ends_only() -> None:
    torch.manual_seed(0)
    logits = torch.randn(2, 7, 2, requires_grad=True)
    ends: list[list[int | None]] = [[1, 3, None], [2, 6]]  # a cut step (None) carries nothing
    targets = [[1.0, 0.0, 1.0], [math.nan, 0.25]]  # nan: no label; 0.25: a soft target
    loss, n = step_end_loss(logits, ends, targets)
    logp = torch.log_softmax(logits.detach(), -1)
    expected = -(logp[0, 1, 1] + logp[0, 3, 0] + 0.25 * logp[1, 6, 1] + 0.75 * logp[1, 6, 0])
    assert n == 3 and float(loss.detach()) == pytest.approx(float(expected), abs=1e-6)
    loss.backward()
    assert logits.grad is not None
    touched = {(i, t) for i in range(2) for t in range(7) if logits.grad[i, t].abs().sum() > 0}
    assert touched == {(0, 1), (0, 3), (1, 6)}
    none, zero = step_end_loss(torch.zeros(1, 3, 2), [[None]], [[1.0]])
    assert zero == 0 and float(none) == 0.0


def test_targets_are_thresholded_or_soft_and_measures_follow_processbench() -> None:
    assert step_targets([0.75, 0.25, math.nan], soft=False, threshold=0.5)[:2] == [1.0, 0.0]
    assert step_targets([0.75, 0.25], soft=True, threshold=0.5) == [0.75, 0.25]
    assert step_targets([0.25], soft=False, threshold=0.25) == [1.0]  # Math-Shepherd's hard estimation at k=4
    got = held_out_measures(
        [[0.9, 0.2, 0.1], [0.9, 0.8], [0.9, 0.4]], [[1.0, 0.0, 0.0], [1.0, 1.0], [1.0, 1.0]], 0.5
    )
    assert got.steps == 7 and got.step_accuracy == pytest.approx(6 / 7)
    assert got.first_error_accuracy == pytest.approx(2 / 3)  # the third blames step 1 of a right solution


def _chain_example(rng: random.Random) -> tuple[StepExample, str, str]:
    """A chain-like solution of 3-4 '=' steps, half of them with a slip from some step on (Math-Shepherd rows)."""
    acc = rng.randint(1, 9)
    ops = [(rng.choice("+-"), rng.randint(1, 4)) for _ in range(rng.randint(3, 4))]
    prompt = f"{acc}" + "".join(f"{o}{v}" for o, v in ops) + "="
    steps, labels, slip = [], [], rng.randint(0, 2 * len(ops))
    for k, (o, v) in enumerate(ops):
        acc = acc + v if o == "+" else acc - v
        wrong = k >= slip
        steps.append(f"{acc + (1 if wrong else 0)}=")
        labels.append(0.0 if wrong else 1.0)
    text = prompt + "\nStep 1: " + "".join(s + " ки" for s in steps)
    label = (
        prompt + "\nStep 1: " + "".join(s + (" +" if y else " -") for s, y in zip(steps, labels, strict=True))
    )
    return StepExample(prompt, steps, labels), text, label


def _shepherd_file(path: Path, n: int, bad_line: bool) -> Path:
    rng = random.Random(0)
    lines = []
    for _ in range(n):
        _, text, label = _chain_example(rng)
        lines.append(json.dumps({"input": text, "label": label}, ensure_ascii=False))
    if bad_line:
        lines.insert(3, "{not json")
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def _config(out: Path, **kw: object) -> PRMTrainingConfig:
    base = {"base_model": "tiny:chain", "output_dir": str(out), "max_steps": 3, "batch_size": 8,
            "micro_batch_size": 4, "max_length": 64, "eval_every": 2, "device": "cpu"}  # fmt: skip
    return PRMTrainingConfig.model_validate({**base, **kw})


def test_training_is_deterministic_on_a_cpu_and_writes_a_complete_folder(tmp_path: Path) -> None:
    examples, source = file_labels(_shepherd_file(tmp_path / "ms.jsonl", 40, bad_line=False), "math_shepherd")
    assert len(examples) == 40 and source["skipped"] == 0
    seen: list[object] = []
    a = train_prm(_config(tmp_path / "a"), examples, on_progress=seen.append, source=source)
    b = train_prm(_config(tmp_path / "b"), examples, source=source)
    assert [p.step for p in seen] == [1, 2, 3] and a.steps == 3  # type: ignore[attr-defined]
    assert [p.held_out_step_accuracy is not None for p in seen] == [False, True, True]  # type: ignore[attr-defined]
    assert a.final_loss == b.final_loss and a.held_out_step_accuracy == b.held_out_step_accuracy
    from safetensors.torch import load_file

    wa, wb = load_file(tmp_path / "a" / "model.safetensors"), load_file(tmp_path / "b" / "model.safetensors")
    assert wa.keys() == wb.keys() and all(torch.equal(wa[k], wb[k]) for k in wa)
    c = train_prm(_config(tmp_path / "c", seed=1), examples)
    assert c.final_loss != a.final_loss
    meta = json.loads((tmp_path / "a" / METADATA_FILE).read_text())
    assert meta["kind"] == "token_classification_prm" and meta["base_model"] == "tiny:chain"
    assert (
        meta["held_out_step_accuracy"] == a.held_out_step_accuracy
        and meta["source"]["format"] == "math_shepherd"
    )
    assert json.loads((tmp_path / "a" / "config.json").read_text())["architectures"][0].endswith(
        "ForTokenClassification"
    )
    assert meta["majority_step_accuracy"] is not None and meta["majority_first_error_accuracy"] is not None
    assert not (tmp_path / "a.partial").exists()


def test_should_stop_saves_nothing_and_no_training_steps_is_a_data_error(tmp_path: Path) -> None:
    rng = random.Random(1)
    examples = [_chain_example(rng)[0] for _ in range(12)]
    with pytest.raises(PRMTrainingStopped):
        train_prm(_config(tmp_path / "x"), examples, should_stop=lambda: True)
    assert not (tmp_path / "x").exists()
    unlabelled = [StepExample(e.prompt, e.steps, [math.nan] * len(e.steps)) for e in examples]
    with pytest.raises(DataError, match="no labelled training step"):
        train_prm(_config(tmp_path / "y"), unlabelled)


def test_a_math_shepherd_file_with_a_bad_line_trains_through_the_cli(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    labels = _shepherd_file(tmp_path / "ms.jsonl", 30, bad_line=True)
    out = tmp_path / "prm"
    argv = ["train-prm", "--labels", str(labels), "--format", "math_shepherd", "--base-model", "tiny:chain",
            "--out", str(out), "--epochs", "1", "--batch-size", "8", "--max-length", "64"]  # fmt: skip
    assert main(argv) == 0
    got = capsys.readouterr()
    assert got.out.strip().endswith(str(out)) and "1 rows skipped; first: line 4" in got.err
    meta = json.loads((out / METADATA_FILE).read_text())
    assert meta["source"]["skipped"] == 1 and meta["train_examples"] + meta["held_out_examples"] == 30
    empty = tmp_path / "empty.jsonl"
    empty.write_text('{"input": "no tags", "label": "no tags"}\n', encoding="utf-8")
    assert main([*argv[:2], str(empty), *argv[3:]]) == 2  # one clear error, no traceback
    assert "no math_shepherd example" in capsys.readouterr().err
    assert main(["train-prm", "--labels", str(labels)]) == 2
