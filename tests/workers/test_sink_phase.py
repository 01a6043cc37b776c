"""DjangoRunSink.on_phase: a first-use model build reaches the Run (and the run page) while it happens,
and the first step ends it; end to end through ``train`` with a real (5-step) build of the tiny model."""

from __future__ import annotations

from pathlib import Path

import pytest
from pytest_django import Settings

from tests.trainer.build_helpers import QUICK_SFT_STEPS, quick_builds
from tests.workers.helpers import launch_run, make_project, make_user
from trainer.config import config_from_dict
from trainer.sinks import PhaseReport, StepReport
from trainer.step.loop import train
from webapp.experiments.models import Run, RunEvent
from webapp.experiments.services import run_mark_started
from workers.sink import DjangoRunSink

SMALL = {
    "model": {"name_or_path": "tiny:addition"}, "data": {"source": "demo", "size": 16},
    "rollout": {"num_generations": 4, "max_completion_length": 4},
    "training": {"max_steps": 1, "prompts_per_step": 2},
}  # fmt: skip


@pytest.fixture
def run(transactional_db: None, settings: Settings, runs_dir: Path) -> Run:
    """Committed: the sink's step writer stores steps through a connection of its own."""
    settings.RLVR_ENQUEUE = False
    owner = make_user("alice")
    launched: Run = launch_run(owner, make_project(owner), SMALL)
    return run_mark_started(run_id=launched.pk, worker="w1")


def phase(done: int, total: int = 10) -> PhaseReport:
    return PhaseReport(
        "building_model",
        "Building tiny:addition",
        "tiny:addition",
        done,
        total,
        done * 2.0,
        (total - done) * 2.0,
    )


def test_a_phase_report_is_stored_through_the_service(run: Run) -> None:
    DjangoRunSink(run.pk).on_phase(phase(4))
    run.refresh_from_db()
    assert run.phase == "building_model"
    assert (run.phase_progress["done"], run.phase_progress["total"], run.phase_progress["eta_s"]) == (
        4,
        10,
        12.0,
    )


def test_the_first_step_after_a_build_clears_it(run: Run) -> None:
    sink = DjangoRunSink(run.pk)
    sink.on_phase(phase(10))
    sink.on_step(StepReport(step=1, max_steps=1, metrics={}, rollouts=[], elapsed_s=0.1))
    sink.close()
    run.refresh_from_db()
    assert (run.phase, run.step) == ("", 1)


def test_training_with_an_unbuilt_tiny_model_shows_the_build_on_the_run(
    run: Run, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    quick_builds(monkeypatch, tmp_path / "rlvr-home")  # nothing cached: the run builds the model
    seen: list[tuple[str, int]] = []

    class Watching(DjangoRunSink):
        """Reads the Run back after each report, as the page would between two events."""

        def on_phase(self, report: PhaseReport) -> None:
            super().on_phase(report)
            stored = Run.objects.get(pk=self.run_id)
            seen.append((stored.phase, stored.phase_progress["done"]))

    train(config_from_dict(run.config), Watching(run.pk), log=lambda msg: None)
    assert seen[0] == ("building_model", 1) and seen[-1] == ("building_model", QUICK_SFT_STEPS)
    run.refresh_from_db()
    assert (run.status, run.phase, run.step) == ("succeeded", "", 1)
    kinds = list(RunEvent.objects.filter(run=run).values_list("kind", flat=True))
    assert kinds.index("phase_started") < kinds.index("phase_finished") < kinds.index("start")
