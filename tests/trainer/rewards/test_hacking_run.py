"""The reward-hacking watch in a real training run (trainer/step/loop.py): a learned source with a non-zero weight,
a weight-0 monitor verifier reported but not trained on, ``watch/hacking`` on every step, one warning through the
sink at the step the flag fires, and the same step after a resume from a checkpoint.

The two test-only verifiers below make the divergence deterministic: the "proxy" reward climbs from step 4 on and
the "gold" monitor falls from step 4 on (both read the step from how often the proxy was called), with a little
within-group spread so every group has a gradient. A tiny untrained model cannot hack a reward model in 6 steps;
what is under test is the loop's wiring, not the policy."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import ClassVar

import pytest

from tests.trainer.loop_helpers import Steps, tiny_config
from trainer.config import ExperimentConfig
from trainer.rewards.hacking import HACKING_METRIC, WARNING_KIND
from trainer.samples import Sample
from trainer.sinks import JsonlSink, MultiSink
from trainer.step.loop import train
from trainer.verifiers.base import VERIFIERS, VerifierParams, VerifierResult

CALLS = {"proxy": 0}  # proxy batches scored so far in this run: the step


def _divergence(step: int) -> float:
    return 0.1 * max(0, step - 3)


@VERIFIERS.register("test_rising_proxy")
class RisingProxy:
    """Test only: a learned reward that starts climbing at step 4 (plus a spread by completion length)."""

    name: ClassVar[str] = "test_rising_proxy"
    Params: ClassVar[type[VerifierParams]] = VerifierParams

    def __init__(self, params: VerifierParams) -> None:
        pass

    def __call__(self, completions: Sequence[str], samples: Sequence[Sample]) -> list[VerifierResult]:
        CALLS["proxy"] += 1
        base = 0.3 + _divergence(CALLS["proxy"])
        return [VerifierResult(base + 0.01 * (len(c) % 3), True, {}) for c in completions]


@VERIFIERS.register("test_falling_gold")
class FallingGold:
    """Test only: the monitor's accuracy, falling from step 4 on."""

    name: ClassVar[str] = "test_falling_gold"
    Params: ClassVar[type[VerifierParams]] = VerifierParams

    def __init__(self, params: VerifierParams) -> None:
        pass

    def __call__(self, completions: Sequence[str], samples: Sequence[Sample]) -> list[VerifierResult]:
        value = 0.5 - _divergence(CALLS["proxy"])
        return [VerifierResult(value, value > 0.4, {}) for _ in completions]


class Warnings(Steps):
    def __init__(self) -> None:
        super().__init__()
        self.warnings: list[tuple[int, str, str]] = []

    def on_warning(self, step: int, kind: str, message: str) -> None:
        self.warnings.append((step, kind, message))


def watched_config(model_dir: Path, out_dir: Path, max_steps: int) -> ExperimentConfig:
    return tiny_config(
        model_dir,
        out_dir,
        verifiers=[
            {"name": "test_rising_proxy", "label": "rm"},
            {"name": "test_falling_gold", "label": "gold"},
        ],
        algorithm={"reward_weights": [1.0, 0.0]},
        reward_watch={"learned": "rm", "window": 3},
        training={"max_steps": max_steps},
    )


def run(cfg: ExperimentConfig, resume_from: Path | None = None, start: int = 0) -> Warnings:
    CALLS["proxy"] = start
    sink = Warnings()
    train(cfg, sink=sink, resume_from=resume_from, log=lambda m: None)
    return sink


def test_a_weight_zero_monitor_is_reported_but_not_trained_on(random_model_dir: Path, tmp_path: Path) -> None:
    sink = run(watched_config(random_model_dir, tmp_path, max_steps=2))
    for report in sink.reports:
        m = report.metrics
        assert m["reward/gold_mean"] == pytest.approx(0.5)
        assert m["rollout/reward_mean"] == pytest.approx(m["reward/rm_mean"])  # the monitor adds nothing
        assert all(r.reward == pytest.approx(r.rewards["rm"]) for r in report.rollouts)


def test_the_watch_flags_the_step_where_the_learned_reward_rises_and_accuracy_falls(
    random_model_dir: Path, tmp_path: Path
) -> None:
    cfg = watched_config(random_model_dir, tmp_path, max_steps=6)
    sink = MultiSink([jsonl := JsonlSink(tmp_path / "log"), recorder := Warnings()])
    CALLS["proxy"] = 0
    train(cfg, sink=sink, log=lambda m: None)

    assert [r.metrics[HACKING_METRIC] for r in recorder.reports] == [0, 0, 0, 1, 1, 1]
    assert len(recorder.warnings) == 1
    step, kind, message = recorder.warnings[0]
    assert (step, kind) == (4, WARNING_KIND)
    assert message.startswith("Reward hacking suspected at step 4: reward/rm_mean rose +0.1")
    assert "over steps 2-4 while the verifier's accuracy (reward/gold_mean) fell -0.10" in message
    events = [json.loads(line) for line in (jsonl.run_dir / "events.jsonl").read_text().splitlines()]
    assert [e["step"] for e in events if e["event"] == "warning"] == [4]


@pytest.mark.parametrize("stopped_at", [3, 5])  # before the flag (its window spans the resume) and after it
def test_a_resumed_run_flags_the_same_step(random_model_dir: Path, tmp_path: Path, stopped_at: int) -> None:
    first = run(watched_config(random_model_dir, tmp_path, max_steps=stopped_at))
    second = run(
        watched_config(random_model_dir, tmp_path, max_steps=6), resume_from=tmp_path, start=stopped_at
    )
    flags = [r.metrics[HACKING_METRIC] for r in first.reports + second.reports]
    assert flags == [0, 0, 0, 1, 1, 1]
    assert [w[0] for w in first.warnings + second.warnings] == [4]


def test_a_run_without_a_watch_reports_no_watch_metric(random_model_dir: Path, tmp_path: Path) -> None:
    sink = Steps()
    train(tiny_config(random_model_dir, tmp_path), sink=sink, log=lambda m: None)
    assert all(HACKING_METRIC not in r.metrics for r in sink.reports)


def test_a_data_parallel_runs_warning_is_relayed_from_rank_zero(tmp_path: Path) -> None:
    """Rank 0 writes the warning to the events file; the launching process hands it to the run's sink."""
    from trainer.distributed.context import EVENTS_FILE, EventFileSink
    from trainer.distributed.launch import _forward

    EventFileSink(tmp_path).on_warning(9, WARNING_KIND, "Reward hacking suspected at step 9: ...")
    recorder = Warnings()
    for line in (tmp_path / EVENTS_FILE).read_text().splitlines():
        _forward(json.loads(line), recorder, lambda m: None)
    assert recorder.warnings == [(9, WARNING_KIND, "Reward hacking suspected at step 9: ...")]
