"""The benchmarks REST API: who may read and launch, what comes back, exports."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from django.contrib.auth.models import User
from django.core.files.uploadedfile import SimpleUploadedFile
from rest_framework.test import APIClient

from tests.webapp.benchmarks.helpers import SMALL_BENCHMARK, problem_result
from webapp.benchmarks.models import Benchmark, EvalRun
from webapp.benchmarks.results import eval_record_problems
from webapp.experiments.models import Checkpoint, Experiment, Run
from webapp.teams.models import Project

Api = Callable[[User | None], APIClient]
Join = Callable[[User, str | None], User]
DATA = Path(__file__).resolve().parents[2] / "data"


def test_an_admin_creates_a_benchmark_through_the_api(
    api: Api, project: Project, bob: User, join: Join
) -> None:
    join(bob, "admin")
    body = {"name": "add", "source": "builtin", "builtin": "builtin:addition", "config": SMALL_BENCHMARK}
    response = api(bob).post(f"/api/projects/{project.pk}/benchmarks/", body, format="json")
    assert response.status_code == 201, response.json()
    assert response.json()["config"]["n_samples"] == 4
    assert [b["name"] for b in api(bob).get(f"/api/projects/{project.pk}/benchmarks/").json()] == ["add"]


def test_a_bad_config_answers_400_with_the_field(api: Api, project: Project, alice: User) -> None:
    body = {"name": "add", "source": "builtin", "builtin": "builtin:addition", "config": {"temperature": -1}}
    response = api(alice).post(f"/api/projects/{project.pk}/benchmarks/", body, format="json")
    assert response.status_code == 400 and "temperature" in response.json()["message"]


def test_a_file_with_bad_rows_answers_400_listing_them(api: Api, project: Project, alice: User) -> None:
    file = SimpleUploadedFile("m.jsonl", (DATA / "missing_answer.jsonl").read_bytes())
    response = api(alice).post(
        f"/api/projects/{project.pk}/benchmark-files/",
        {"file": file, "problem_field": "prompt"},
        format="multipart",
    )
    assert response.status_code == 400
    assert response.json()["extra"]["fields"]["bad_rows"][0].startswith("row 2 (line 3)")


@pytest.mark.parametrize(
    ("role", "status"), [("viewer", 403), ("annotator", 403), ("admin", 201), (None, 404)]
)
def test_launching_an_evaluation_needs_the_admin_role(
    api: Api,
    benchmark: Benchmark,
    experiment: Experiment,
    bob: User,
    join: Join,
    role: str | None,
    status: int,
    no_enqueue: None,
) -> None:
    join(bob, role)
    response = api(bob).post(
        f"/api/benchmarks/{benchmark.pk}/evals/", {"experiments": [experiment.pk]}, format="json"
    )
    assert response.status_code == status


@pytest.mark.parametrize("field", ["experiments", "checkpoints"])
def test_a_target_id_past_the_database_integer_range_is_a_400_naming_the_field(
    api: Api, benchmark: Benchmark, alice: User, no_enqueue: None, field: str
) -> None:
    response = api(alice).post(f"/api/benchmarks/{benchmark.pk}/evals/", {field: [2**63]}, format="json")
    assert response.status_code == 400
    assert set(response.json()["extra"]["fields"]) == {f"{field}.0"}


def test_a_lone_surrogate_in_an_object_key_of_an_evaluation_launch_is_a_400(
    api: Api, benchmark: Benchmark, alice: User, no_enqueue: None
) -> None:
    body = '{"experiments": [], "extra": {"k\\ud800": true}}'
    response = api(alice).generic(
        "POST", f"/api/benchmarks/{benchmark.pk}/evals/", body, content_type="application/json"
    )
    assert response.status_code == 400
    assert "lone UTF-16 surrogate" in response.json()["message"]


def test_an_evaluation_targets_the_base_model_or_a_checkpoint(
    api: Api,
    benchmark: Benchmark,
    experiment: Experiment,
    run: Run,
    alice: User,
    no_enqueue: None,
    tmp_path: Path,
) -> None:
    (tmp_path / "step-000008").mkdir()
    checkpoint = Checkpoint.objects.create(run=run, step=8, path=str(tmp_path / "step-000008"))
    response = api(alice).post(
        f"/api/benchmarks/{benchmark.pk}/evals/",
        {"experiments": [experiment.pk], "checkpoints": [checkpoint.pk]},
        format="json",
    )
    assert response.status_code == 201
    base, ckpt = response.json()
    assert (base["target_kind"], base["model_path"], base["status"]) == ("base", "tiny:addition", "queued")
    assert (ckpt["target_kind"], ckpt["model_path"], ckpt["step"]) == (
        "checkpoint",
        f"checkpoint:{checkpoint.pk}",
        8,
    )


def test_targets_of_another_project_are_refused(
    api: Api, benchmark: Benchmark, alice: User, no_enqueue: None
) -> None:
    from webapp.experiments.services import experiment_create
    from webapp.teams.services import project_create

    other = experiment_create(
        project=project_create(name="Other", owner=alice), actor=alice, name="o", config={}
    )
    response = api(alice).post(
        f"/api/benchmarks/{benchmark.pk}/evals/", {"experiments": [other.pk]}, format="json"
    )
    assert response.status_code == 400 and "Unknown targets" in response.json()["message"]


def test_a_viewer_reads_problems_and_samples_and_an_outsider_gets_404(
    api: Api,
    benchmark: Benchmark,
    experiment: Experiment,
    alice: User,
    bob: User,
    charlie: User,
    join: Join,
    no_enqueue: None,
) -> None:
    from webapp.benchmarks.services import eval_launch

    row = eval_launch(benchmark=benchmark, actor=alice, experiments=[experiment])[0]
    eval_record_problems(
        eval_run_id=row.pk,
        problems=[problem_result("row-1"), problem_result("row-2", index=1, correct=[True] * 4)],
    )
    join(bob, "viewer")
    problems = api(bob).get(f"/api/evals/{row.pk}/problems/?correct=false").json()
    assert [p["problem_id"] for p in problems] == ["row-1"]
    samples = api(bob).get(f"/api/eval-problems/{problems[0]['id']}/samples/").json()
    assert samples["n"] == 4 and samples["samples"][1]["tokens"] == [" <b>5</b>", "<eos>"]
    assert api(charlie).get(f"/api/evals/{row.pk}/").status_code == 404
    assert api(charlie).get(f"/api/eval-problems/{problems[0]['id']}/samples/").status_code == 404


def test_cancelling_a_queued_evaluation_ends_it_and_a_finished_one_conflicts(
    api: Api, benchmark: Benchmark, experiment: Experiment, alice: User, no_enqueue: None
) -> None:
    from webapp.benchmarks.services import eval_launch

    row = eval_launch(benchmark=benchmark, actor=alice, experiments=[experiment])[0]
    assert api(alice).post(f"/api/evals/{row.pk}/cancel/").json()["status"] == "cancelled"
    assert api(alice).post(f"/api/evals/{row.pk}/cancel/").status_code == 409


def test_exports_come_as_attachments(
    api: Api, project: Project, benchmark: Benchmark, experiment: Experiment, alice: User
) -> None:
    EvalRun.objects.create(
        benchmark=benchmark,
        target_kind="base",
        experiment=experiment,
        model_path="m",
        label="base_1",
        config={},
        status="succeeded",
        metrics={"avg@4": 0.5},
    )
    for kind, needle in (
        ("csv", "base_1,base"),
        ("json", '"label": "base_1"'),
        ("latex", r"base\_1 & \textbf{50.0}"),
    ):
        response = api(alice).get(f"/api/projects/{project.pk}/benchmark-results/?export={kind}")
        assert response.status_code == 200 and needle in response.content.decode()
        assert "attachment" in response["Content-Disposition"]
