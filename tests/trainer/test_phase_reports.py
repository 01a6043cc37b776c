"""A first-use model build reports itself as a phase of the run (trainer.sinks.PhaseReport), throttled,
through every sink: the run page, `rlvr train` and the log said nothing for half an hour before.

The builds here are real but short: a fresh RLVR_HOME per test and 5 warm-start steps instead of 1200.
"""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
import torch

from tests.trainer.build_helpers import QUICK_SFT_STEPS, quick_builds
from tests.trainer.loop_helpers import tiny_config
from trainer.config import ExperimentConfig, TeacherConfig
from trainer.distributed.context import EVENTS_FILE, EventFileSink
from trainer.distributed.launch import _forward
from trainer.models.tiny_model import build_tiny_model, char_tokenizer, ensure_tiny_model
from trainer.sinks import (
    ConsoleSink,
    JsonlSink,
    MultiSink,
    NullSink,
    PhaseReport,
    RunInfo,
    StepReport,
    throttle_phases,
)
from trainer.step.loop import train
from trainer.step.run_setup import BUILDING_MODEL, load_model, model_build_reporter
from trainer.step.teacher import load_teacher


class Events(NullSink):
    """Keeps phase reports and the order of phase / start events."""

    def __init__(self) -> None:
        self.phases: list[PhaseReport] = []
        self.order: list[str] = []

    def on_phase(self, phase: PhaseReport) -> None:
        self.phases.append(phase)
        self.order.append("phase")

    def on_start(self, info: RunInfo) -> None:
        self.order.append("start")


@pytest.fixture
def fresh_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    return quick_builds(monkeypatch, tmp_path / "rlvr-home")


def report(done: int, total: int = 100, subject: str = "tiny:addition") -> PhaseReport:
    return PhaseReport(
        BUILDING_MODEL, f"Building {subject}", subject, done, total, done * 0.1, (total - done) * 0.1
    )


def test_throttling_keeps_the_first_and_last_report_and_at_most_two_a_second() -> None:
    now = [0]
    heard: list[int] = []
    forward = throttle_phases(lambda p: heard.append(p.done), interval_s=10, clock=lambda: now[0])
    for done in range(1, 101):  # one step a second, one report at most every 10 s
        now[0] = done
        forward(report(done))
    assert heard == [1, 11, 21, 31, 41, 51, 61, 71, 81, 91, 100]


def test_a_second_model_starts_its_own_phase_at_once() -> None:
    heard: list[str] = []
    forward = throttle_phases(
        lambda p: heard.append(f"{p.subject}:{p.done}"), interval_s=60, clock=lambda: 0.0
    )
    for done in (1, 2, 3):
        forward(report(done, 3, "tiny:addition"))
    for done in (1, 2, 3):
        forward(report(done, 3, "tiny:addition-teacher"))
    assert heard == [
        "tiny:addition:1",
        "tiny:addition:3",
        "tiny:addition-teacher:1",
        "tiny:addition-teacher:3",
    ]


def test_a_real_build_reports_building_model_with_the_count_and_time_left(fresh_home: Path) -> None:
    phases: list[PhaseReport] = []
    ensure_tiny_model(
        "tiny:addition",
        sft_steps=QUICK_SFT_STEPS,
        on_progress=model_build_reporter(phases.append),
        log=lambda msg: None,
    )
    assert phases[0].name == BUILDING_MODEL and phases[0].done == 1 and phases[0].total == QUICK_SFT_STEPS
    assert "tiny:addition" in phases[0].label and phases[0].eta_s is not None and phases[0].eta_s > 0
    assert phases[-1].finished and phases[-1].eta_s == 0
    assert [p.done for p in phases] == sorted(p.done for p in phases)


def test_train_reports_the_build_before_the_run_starts_and_nothing_once_cached(
    fresh_home: Path, tmp_path: Path
) -> None:
    config = tiny_config("tiny:addition", tmp_path / "out", training={"max_steps": 1})  # type: ignore[arg-type]
    first = Events()
    train(config, first, log=lambda msg: None)
    assert first.order[0] == "phase" and first.order[-1] == "start"
    assert {p.subject for p in first.phases} == {"tiny:addition"}
    assert first.phases[-1].finished and first.phases[-1].total == QUICK_SFT_STEPS

    again = Events()
    train(
        tiny_config("tiny:addition", tmp_path / "out2", training={"max_steps": 1}), again, log=lambda m: None
    )  # type: ignore[arg-type]
    assert again.phases == []


def test_a_built_in_teacher_reports_the_student_build_then_its_own(fresh_home: Path, tmp_path: Path) -> None:
    phases: list[PhaseReport] = []
    policy = load_model(
        str(build_tiny_model(tmp_path / "policy", hidden=32, layers=1, heads=2)),
        ExperimentConfig(),
        torch.device("cpu"),
    )
    config = ExperimentConfig(teacher=TeacherConfig(name_or_path="tiny:addition-teacher"))
    teacher = load_teacher(
        config, policy, char_tokenizer(), torch.device("cpu"), on_build=model_build_reporter(phases.append)
    )
    assert teacher is not None
    subjects = [p.subject for p in phases]
    assert subjects[0] == "tiny:addition" and subjects[-1] == "tiny:addition-teacher"
    assert [p.finished for p in phases if p.subject == "tiny:addition-teacher"][-1]


def test_the_jsonl_sink_writes_each_phases_first_and_last_report(tmp_path: Path) -> None:
    sink = JsonlSink(tmp_path / "run")
    for done in range(1, 11):
        sink.on_phase(report(done, 10))
    lines = [json.loads(line) for line in (tmp_path / "run" / "events.jsonl").read_text().splitlines()]
    assert [(line["event"], line["done"]) for line in lines] == [("phase", 1), ("phase", 10)]
    assert lines[0]["label"] == "Building tiny:addition" and lines[0]["step"] == 0


def test_the_console_shows_the_builds_progress_then_how_long_it_took() -> None:
    out = io.StringIO()  # not a terminal (a log, a pipe): whole lines in the run page's words, no bar
    sink = MultiSink([ConsoleSink(stream=out), NullSink()])
    for done in (1, 50, 100):
        sink.on_phase(report(done, 100))
    lines = out.getvalue().splitlines()
    assert lines[0].startswith("Building tiny:addition: 1 / 100 steps · about ") and lines[0].endswith(
        " left"
    )
    assert lines[-1] == "Building tiny:addition: 100 / 100 steps · done in 10s"


def test_rank_zeros_phase_reports_reach_the_launchers_sink(tmp_path: Path) -> None:
    EventFileSink(tmp_path).on_phase(report(7, 10))
    (line,) = (tmp_path / EVENTS_FILE).read_text().splitlines()
    heard = Events()
    _forward(json.loads(line), heard, lambda msg: None)
    assert heard.phases == [report(7, 10)]


def test_a_sink_written_before_phases_still_hears_the_steps(fresh_home: Path, tmp_path: Path) -> None:
    class StepsOnly:
        def __init__(self) -> None:
            self.steps: list[int] = []

        def on_start(self, info: RunInfo) -> None: ...

        def on_step(self, report: StepReport) -> None:
            self.steps.append(report.step)

        def on_checkpoint(self, step: int, path: str) -> None: ...

        def on_end(self, status: str, final_metrics: dict[str, float]) -> None: ...

        def on_error(self, message: str, traceback_text: str) -> None: ...

    sink = StepsOnly()
    train(tiny_config("tiny:addition", tmp_path / "out", training={"max_steps": 1}), sink, log=lambda m: None)  # type: ignore[arg-type]
    assert sink.steps == [1]
