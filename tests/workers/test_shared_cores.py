"""A model build beside a training run on the same machine: found by its marker while it runs (a real, short
build), and told on the run as one warning event per build (workers/shared_cores.py)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from pytest_django import Settings

from tests.trainer.build_helpers import quick_builds
from tests.workers.helpers import launch_run, make_project, make_user
from trainer.models.tiny_model import BUILDER_FILE, BuildProgress, builds_in_progress, ensure_tiny_model
from trainer.sinks import StepReport
from webapp.experiments.models import Run, RunEvent
from webapp.experiments.services import run_mark_started
from workers.shared_cores import SharedCoresWatch

SMALL = {
    "data": {"source": "demo", "size": 16}, "rollout": {"num_generations": 4, "max_completion_length": 4},
    "training": {"max_steps": 3, "prompts_per_step": 2},
}  # fmt: skip


@pytest.fixture
def run(db: None, settings: Settings) -> Run:
    settings.RLVR_ENQUEUE = False
    owner = make_user("alice")
    return run_mark_started(run_id=launch_run(owner, make_project(owner), SMALL).pk, worker="w1")


def report(step: int) -> StepReport:
    return StepReport(step=step, max_steps=3, metrics={}, rollouts=[], elapsed_s=0.0)


def test_a_build_in_progress_is_found_by_any_process_and_gone_when_it_is_done(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    quick_builds(monkeypatch, tmp_path / "home")
    seen: list[list[tuple[str, int]]] = []

    def during(progress: BuildProgress) -> None:
        seen.append(builds_in_progress())
        assert builds_in_progress(exclude_pid=os.getpid()) == []  # a run never warns about its own build

    path = ensure_tiny_model("tiny:addition", on_progress=during, log=lambda m: None)
    assert seen and all(found == [("tiny:addition", os.getpid())] for found in seen)
    assert builds_in_progress() == [] and not (path / BUILDER_FILE).exists()


def test_a_build_whose_process_died_is_not_in_progress(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("RLVR_HOME", str(tmp_path))
    left = tmp_path / "models" / ".build-killed"
    left.mkdir(parents=True)
    (left / BUILDER_FILE).write_text("999999999 tiny:chain\n")  # no such process
    assert builds_in_progress() == []


def test_a_build_beside_training_is_one_warning_on_the_run(run: Run, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RLVR_TORCH_THREADS", "1")
    builds = [("tiny:chain", 4242)]
    watch = SharedCoresWatch(run.pk, interval_s=0.0, builds=lambda: builds)
    for step in (1, 2):
        watch.on_step(report(step))
    (event,) = RunEvent.objects.filter(run=run, kind="shared_cores")
    assert event.level == "warning" and event.step == 1
    assert "tiny:chain is being built beside this run" in event.message and "1 torch thread " in event.message
    builds.append(("tiny:chain-teacher", 4343))  # another build: told too
    watch.on_step(report(3))
    assert RunEvent.objects.filter(run=run, kind="shared_cores").count() == 2
