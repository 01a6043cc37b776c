"""Checkpoints and --resume: a resumed run computes exactly the steps an uninterrupted one would."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from transformers import AutoModelForCausalLM

from tests.trainer.loop_helpers import Steps, tiny_config
from trainer.errors import CheckpointError
from trainer.models.checkpoint import latest_checkpoint, list_checkpoints
from trainer.sinks import JsonlSink, StepReport
from trainer.step.loop import train


def comparable(report: StepReport) -> dict[str, float]:
    return {
        k: v
        for k, v in report.metrics.items()
        if not k.startswith("perf/") and not k.endswith("_latency_s")  # wall-clock times
    }


def test_resumed_run_matches_an_uninterrupted_one(random_model_dir: Path, tmp_path: Path) -> None:
    straight = Steps()
    train(
        tiny_config(random_model_dir, tmp_path / "a", training={"max_steps": 4}),
        sink=straight,
        log=lambda m: None,
    )

    first, second = Steps(), Steps()
    train(
        tiny_config(random_model_dir, tmp_path / "b", training={"max_steps": 2}),
        sink=first,
        log=lambda m: None,
    )
    train(
        tiny_config(random_model_dir, tmp_path / "b", training={"max_steps": 4}),
        sink=second,
        resume_from=tmp_path / "b",
        log=lambda m: None,
    )

    assert [r.step for r in second.reports] == [3, 4]
    resumed = first.reports + second.reports
    for a, b in zip(straight.reports, resumed, strict=True):
        assert comparable(a) == pytest.approx(comparable(b), rel=1e-5, abs=1e-6)
        assert [r.completion for r in a.rollouts] == [r.completion for r in b.rollouts]
    wa = AutoModelForCausalLM.from_pretrained(latest_checkpoint(tmp_path / "a")).state_dict()
    wb = AutoModelForCausalLM.from_pretrained(latest_checkpoint(tmp_path / "b")).state_dict()
    assert all(torch.allclose(wa[k], wb[k], atol=1e-6) for k in wa)


def test_checkpoints_are_pruned_to_the_limit(random_model_dir: Path, tmp_path: Path) -> None:
    cfg = tiny_config(
        random_model_dir,
        tmp_path,
        training={"max_steps": 4},
        checkpoint={"save_steps": 1, "save_total_limit": 2},
    )
    train(cfg, log=lambda m: None)
    assert [p.name for p in list_checkpoints(tmp_path)] == ["step-000003", "step-000004"]


def test_resume_refuses_a_config_that_changes_training(random_model_dir: Path, tmp_path: Path) -> None:
    train(tiny_config(random_model_dir, tmp_path, training={"max_steps": 1}), log=lambda m: None)
    changed = tiny_config(random_model_dir, tmp_path, training={"max_steps": 3, "learning_rate": 0.5})
    with pytest.raises(CheckpointError, match=r"training\.learning_rate"):
        train(changed, resume_from=tmp_path, log=lambda m: None)


def test_resume_from_an_empty_directory_says_what_to_do(random_model_dir: Path, tmp_path: Path) -> None:
    with pytest.raises(CheckpointError, match="no complete checkpoint"):
        train(tiny_config(random_model_dir, tmp_path), resume_from=tmp_path, log=lambda m: None)


def test_a_half_written_checkpoint_is_ignored(random_model_dir: Path, tmp_path: Path) -> None:
    train(tiny_config(random_model_dir, tmp_path, training={"max_steps": 1}), log=lambda m: None)
    (tmp_path / "checkpoints" / ".tmp-step-000002").mkdir()
    (tmp_path / "checkpoints" / "step-000009").mkdir()  # no COMPLETE marker: a crash mid-write
    assert latest_checkpoint(tmp_path) == tmp_path / "checkpoints" / "step-000001"


def test_jsonl_sink_drops_steps_after_the_resumed_checkpoint(random_model_dir: Path, tmp_path: Path) -> None:
    import json

    cfg = tiny_config(random_model_dir, tmp_path, training={"max_steps": 3}, checkpoint={"save_steps": 2})
    train(cfg, sink=JsonlSink(tmp_path), log=lambda m: None)
    # Pretend the run crashed after step 3 but before its final checkpoint: resume from step 2.
    import shutil

    shutil.rmtree(tmp_path / "checkpoints" / "step-000003")
    train(cfg, sink=JsonlSink(tmp_path), resume_from=tmp_path, log=lambda m: None)
    steps = [json.loads(line)["step"] for line in (tmp_path / "metrics.jsonl").read_text().splitlines()]
    assert steps == [1, 2, 3]


def test_a_half_written_last_line_is_dropped_on_resume(tmp_path: Path) -> None:
    """A run killed while writing leaves a partial JSONL line: resuming drops it with the steps after the
    checkpoint, keeps the rest, and writes rollouts as they were (a record with a nested dataclass included)."""
    import dataclasses
    import json

    from trainer.sinks import RolloutRecord, RunInfo

    @dataclasses.dataclass
    class Span:
        start: int

    record = RolloutRecord(
        step=2, prompt_id="p", group=0, sample_index=0, prompt="1+1=", completion="2", finish_reason="eos",
        reward=1.0, rewards={"exact": 1.0}, correct=True, details={"exact": {"span": Span(3)}}, advantage=0.5,
        token_ids=[5], tokens=["2"], token_values={"logprob": [-0.1]},
    )  # fmt: skip
    sink = JsonlSink(tmp_path)

    def info(start_step: int) -> RunInfo:
        return RunInfo(
            name="r", max_steps=3, start_step=start_step, config={}, num_parameters=1, device="cpu"
        )

    sink.on_start(info(0))
    for step in (1, 2):
        rollouts = [record] if step == 2 else []
        sink.on_step(
            StepReport(step=step, max_steps=3, metrics={"loss": 1.0}, rollouts=rollouts, elapsed_s=0)
        )
    with open(tmp_path / "metrics.jsonl", "a") as fh:
        fh.write('{"step": 3, "loss": 3.')  # killed mid-write
    sink.on_start(info(2))
    rows = [json.loads(line) for line in (tmp_path / "metrics.jsonl").read_text().splitlines()]
    assert [r["step"] for r in rows] == [1, 2]
    rollout = json.loads((tmp_path / "rollouts.jsonl").read_text())
    assert rollout == {**dataclasses.asdict(record), "details": {"exact": {"span": {"start": 3}}}}
