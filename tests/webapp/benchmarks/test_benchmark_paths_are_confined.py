"""A benchmark names its data file as ``dataset:<id>`` of its own project and its models by tiny: name,
``checkpoint:<id>`` or a folder under RLVR_MODEL_ROOTS; the eval worker resolves both again itself."""

from __future__ import annotations

import json
from io import BytesIO
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth.models import User
from pytest_django.fixtures import Settings

from trainer.errors import ConfigError
from webapp.benchmarks.config_validation import eval_inputs_for_worker
from webapp.benchmarks.models import Benchmark, EvalRun
from webapp.benchmarks.services import benchmark_create, benchmark_file_upload, eval_launch
from webapp.core.errors import InvalidInput
from webapp.datafiles.models import Dataset
from webapp.experiments.models import Checkpoint, Experiment, Run
from webapp.teams.models import Project

DATA = Path(__file__).resolve().parents[2] / "data"


@pytest.fixture
def file_benchmark(project: Project, alice: User) -> Benchmark:
    path = DATA / "gsm8k_sample.jsonl"
    dataset = benchmark_file_upload(
        project=project,
        actor=alice,
        file=BytesIO(path.read_bytes()),
        filename=path.name,
        size=path.stat().st_size,
        problem_field="question",
        answer_field="answer",
    )
    return benchmark_create(
        project=project,
        actor=alice,
        name="gsm8k",
        source="file",
        dataset=dataset,
        config={"n_samples": 2, "verifiers": [{"name": "math"}]},
    )


def test_the_eval_worker_reads_the_benchmarks_own_file(
    file_benchmark: Benchmark, experiment: Experiment, alice: User, no_enqueue: None
) -> None:
    (row,) = eval_launch(benchmark=file_benchmark, actor=alice, experiments=[experiment])
    assert row.config["data"]["path"] == f"dataset:{file_benchmark.dataset_id}"  # what the user sees
    config, model = eval_inputs_for_worker(eval_run=row)
    assert config["data"]["path"] == Dataset.objects.get(benchmarks=file_benchmark).path
    assert model == "tiny:addition"


def test_the_eval_worker_refuses_a_data_path_changed_behind_the_checks(
    file_benchmark: Benchmark, experiment: Experiment, alice: User, no_enqueue: None
) -> None:
    (row,) = eval_launch(benchmark=file_benchmark, actor=alice, experiments=[experiment])
    EvalRun.objects.filter(pk=row.pk).update(
        config={**row.config, "data": {**row.config["data"], "path": "/etc/passwd"}}
    )
    row.refresh_from_db()
    with pytest.raises(ConfigError, match="is not an uploaded data file of this project"):
        eval_inputs_for_worker(eval_run=row)


def test_the_benchmarks_api_never_returns_the_server_path_of_its_file(
    api: Any, file_benchmark: Benchmark, alice: User
) -> None:
    stored = Dataset.objects.get(benchmarks=file_benchmark).path
    for url in (
        f"/api/benchmarks/{file_benchmark.pk}/",
        f"/api/projects/{file_benchmark.project_id}/benchmarks/",
    ):
        body = api(alice).get(url).json()
        assert stored not in json.dumps(body) and f"dataset:{file_benchmark.dataset_id}" in json.dumps(body)


def test_a_base_model_outside_the_model_roots_is_refused_at_evaluation_launch(
    benchmark: Benchmark, experiment: Experiment, alice: User, no_enqueue: None
) -> None:
    model = {**experiment.config["model"], "name_or_path": "/etc"}
    Experiment.objects.filter(pk=experiment.pk).update(config={**experiment.config, "model": model})
    experiment.refresh_from_db()
    with pytest.raises(InvalidInput) as err:
        eval_launch(benchmark=benchmark, actor=alice, experiments=[experiment])
    assert "outside the allowed model folders" in err.value.fields["targets"][0]
    assert not EvalRun.objects.exists()


def test_a_checkpoint_target_is_named_by_id_and_resolved_by_the_worker(
    benchmark: Benchmark, run: Run, alice: User, tmp_path: Path, no_enqueue: None
) -> None:
    (tmp_path / "step-000008").mkdir()
    checkpoint = Checkpoint.objects.create(run=run, step=8, path=str(tmp_path / "step-000008"))
    (row,) = eval_launch(benchmark=benchmark, actor=alice, checkpoints=[checkpoint])
    assert row.model_path == f"checkpoint:{checkpoint.pk}"
    assert eval_inputs_for_worker(eval_run=row)[1] == checkpoint.path


def test_a_checkpoint_of_another_project_written_into_an_evaluation_is_refused_by_the_worker(
    benchmark: Benchmark,
    experiment: Experiment,
    alice: User,
    bob: User,
    settings: Settings,
    tmp_path: Path,
    no_enqueue: None,
) -> None:
    from webapp.experiments.services import experiment_create, run_launch
    from webapp.teams.services import project_create

    theirs = experiment_create(
        project=project_create(name="Bob's", owner=bob),
        actor=bob,
        name="b",
        config={"data": {"source": "demo"}},
    )
    checkpoint = Checkpoint.objects.create(
        run=run_launch(experiment=theirs, actor=bob), step=1, path=str(tmp_path)
    )
    (row,) = eval_launch(benchmark=benchmark, actor=alice, experiments=[experiment])
    EvalRun.objects.filter(pk=row.pk).update(model_path=f"checkpoint:{checkpoint.pk}")
    row.refresh_from_db()
    with pytest.raises(ConfigError, match="is not a checkpoint of a run in this project"):
        eval_inputs_for_worker(eval_run=row)
