"""Configs stored before paths were confined name their upload and checkpoint by server path; the data
migration turns each path of the same project into its ``dataset:<id>`` / ``checkpoint:<id>``."""

from __future__ import annotations

import importlib

from django.apps import apps
from django.contrib.auth.models import User

from tests.webapp.helpers import SMALL_CONFIG
from webapp.benchmarks.models import Benchmark, EvalRun
from webapp.datafiles.models import Dataset
from webapp.experiments.models import Checkpoint, Experiment, Run
from webapp.teams.models import Project
from webapp.teams.services import project_create

migration = importlib.import_module("webapp.datafiles.migrations.0002_configs_name_datasets_by_id")


def dataset(project: Project, path: str) -> Dataset:
    return Dataset.objects.create(
        project=project, name=path, path=path, format="jsonl", rows=1, prompt_field="prompt"
    )


def test_stored_paths_of_the_projects_own_files_become_references(
    alice: User, bob: User, project: Project
) -> None:
    mine = dataset(project, "/data/datasets/1/7-mine.jsonl")
    theirs = dataset(project_create(name="Bob's", owner=bob), "/data/datasets/2/8-theirs.jsonl")
    legacy = {**SMALL_CONFIG, "data": {"source": "file", "path": mine.path}}
    experiment = Experiment.objects.create(project=project, name="old", config=legacy)
    stranger = Experiment.objects.create(
        project=project, name="odd", config={"data": {"source": "file", "path": theirs.path}}
    )
    run = Run.objects.create(experiment=experiment, config=legacy, max_steps=1)
    checkpoint = Checkpoint.objects.create(run=run, step=1, path="/runs/run-1/step-000001")
    benchmark = Benchmark.objects.create(
        project=project,
        name="b",
        source="file",
        dataset=mine,
        config={"data": {"source": "file", "path": mine.path}},
    )
    row = EvalRun.objects.create(
        benchmark=benchmark,
        target_kind="checkpoint",
        model_path=checkpoint.path,
        label="x",
        config=benchmark.config,
    )

    migration.forwards(apps, None)  # type: ignore[arg-type]  # RunPython passes the schema editor

    for obj in (experiment, run, benchmark, row, stranger):
        obj.refresh_from_db()
    assert experiment.config["data"]["path"] == run.config["data"]["path"] == f"dataset:{mine.pk}"
    assert benchmark.config["data"]["path"] == row.config["data"]["path"] == f"dataset:{mine.pk}"
    assert row.model_path == f"checkpoint:{checkpoint.pk}"
    assert stranger.config["data"]["path"] == theirs.path  # another project's file stays refused at launch
