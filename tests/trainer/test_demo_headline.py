"""The demo's headline in the terminal: the run's own greedy evaluations, at step 0 and after the last step."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from trainer.cli import _report_demo_accuracy
from trainer.sinks import ConsoleSink, StepReport

KEY = "eval/chain_arithmetic/accuracy (greedy)"


def test_rlvr_demo_ends_with_greedy_accuracy_before_and_after_from_the_runs_metrics(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rows = [
        {"step": 0, KEY: 0.102},
        {"step": 1, "rollout/accuracy": 0.1},
        {"step": 200, KEY: 0.25, "rollout/accuracy": 0.3},
    ]
    (tmp_path / "metrics.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    _report_demo_accuracy("builtin:chain_arithmetic", str(tmp_path))
    assert (
        capsys.readouterr().out
        == "greedy accuracy on 500 held-out problems: 0.102 at step 0 -> 0.250 at step 200\n"
    )


def test_the_console_prints_each_evaluation_and_no_training_line_for_step_0() -> None:
    out = io.StringIO()
    sink = ConsoleSink(log_every=10, stream=out)
    sink.on_step(
        StepReport(
            step=0,
            max_steps=20,
            metrics={KEY: 0.102, "eval/chain_arithmetic/eval_s": 7.7},
            rollouts=[],
            elapsed_s=0.0,
        )
    )
    assert out.getvalue().splitlines() == ["step     0  eval chain_arithmetic accuracy (greedy) 0.102"]
