"""``rlvr stack --demo`` launches the demo preset as it ships, even over a data folder kept from an earlier
demo whose experiment ran another task."""

from __future__ import annotations

from django.contrib.auth.models import User

from trainer.presets import preset
from webapp.experiments.models import Experiment, Run
from webapp.experiments.services import experiment_create
from webapp.stack import launch_demo
from webapp.teams.models import Project


def test_the_demo_runs_the_current_preset_and_reuses_its_experiment(
    alice: User, project: Project, enqueued: list[int]
) -> None:
    old = experiment_create(project=project, actor=alice, name="demo", config=preset("addition"))
    first = Run.objects.get(pk=launch_demo(alice, project))
    second = Run.objects.get(pk=launch_demo(alice, project))
    assert first.experiment == second.experiment != old
    assert first.experiment.name == "demo: demo-chain-grpo"
    assert first.config["model"]["name_or_path"] == "tiny:chain"
    assert first.config["teacher"]["name_or_path"] == "tiny:chain-teacher"
    assert Experiment.objects.filter(project=project).count() == 2
    assert first.status == second.status == "queued"
