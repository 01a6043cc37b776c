"""DjangoRunSink.on_warning: a trainer warning (the reward-hacking watch's) becomes a warning event of the run,
with its step, stored after the steps handed over before it."""

from __future__ import annotations

from pathlib import Path

import pytest
from pytest_django import Settings

from tests.workers.helpers import launch_run, make_project, make_user
from trainer.sinks import StepReport
from webapp.experiments.models import MetricPoint, Run, RunEvent
from webapp.experiments.services import run_mark_started
from workers.sink import DjangoRunSink

SMALL = {
    "model": {"name_or_path": "tiny:addition"}, "data": {"source": "demo", "size": 16},
    "rollout": {"num_generations": 4, "max_completion_length": 4},
    "training": {"max_steps": 3, "prompts_per_step": 2},
}  # fmt: skip


@pytest.fixture
def run(transactional_db: None, settings: Settings, runs_dir: Path) -> Run:
    """Committed: the sink's step writer stores steps through a connection of its own."""
    settings.RLVR_ENQUEUE = False
    owner = make_user("alice")
    launched: Run = launch_run(owner, make_project(owner), SMALL)
    return run_mark_started(run_id=launched.pk, worker="w1")


def test_a_warning_is_a_warning_event_with_its_step_after_the_step_it_follows(run: Run) -> None:
    sink = DjangoRunSink(run.pk)
    sink.on_step(StepReport(step=2, max_steps=3, metrics={"watch/hacking": 1.0}, rollouts=[], elapsed_s=0.1))
    sink.on_warning(2, "reward_hacking", "Reward hacking suspected at step 2: ...")
    sink.flush()
    sink.close()
    event = RunEvent.objects.get(run=run, kind="reward_hacking")
    assert (event.level, event.step, event.message) == (
        "warning",
        2,
        "Reward hacking suspected at step 2: ...",
    )
    assert MetricPoint.objects.filter(run=run, key="watch/hacking", step=2).exists()
