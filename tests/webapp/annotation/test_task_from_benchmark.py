"""Annotation tasks from an evaluation's benchmark samples: snapshots, the sampling rule, the API and the page."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.test import Client
from rest_framework.test import APIClient

from tests.webapp.benchmarks.helpers import SMALL_BENCHMARK, problem_result
from webapp.annotation.models import AnnotationItem, AnnotationTask, Assignment, SourceKind
from webapp.annotation.services import task_create_from_eval
from webapp.benchmarks.models import EvalRun
from webapp.experiments.models import Experiment
from webapp.rubrics.models import Rubric
from webapp.teams.models import Project


@pytest.fixture
def eval_run(project: Project, experiment: Experiment, alice: User, settings: Any) -> EvalRun:
    """A finished evaluation of 3 problems x 4 samples (samples 0 and 3 right, 1 and 2 wrong)."""
    from webapp.benchmarks.results import eval_record_problems
    from webapp.benchmarks.services import benchmark_create, eval_finish, eval_launch

    settings.RLVR_ENQUEUE = False
    benchmark = benchmark_create(
        project=project,
        actor=alice,
        name="addition",
        source="builtin",
        builtin="builtin:addition",
        config=dict(SMALL_BENCHMARK),
    )
    row = eval_launch(benchmark=benchmark, actor=alice, experiments=[experiment])[0]
    eval_record_problems(eval_run_id=row.pk, problems=[problem_result(f"p{i}", index=i) for i in range(3)])
    return eval_finish(eval_run_id=row.pk, status="succeeded", metrics={"avg@4": 0.5}, ci={}, timings={})


def test_items_snapshot_the_problem_the_sample_and_where_it_came_from(
    eval_run: EvalRun, rubric: Rubric, alice: User, annotators: list[User]
) -> None:
    task = task_create_from_eval(
        eval_run=eval_run, rubric=rubric, actor=alice, sampling={"n": 5, "seed": 3}, annotators_per_item=2
    )
    items = list(task.items.all())
    assert task.source_kind == SourceKind.BENCHMARK and task.sampling["eval_run"] == eval_run.pk
    assert task.name == f"addition on {eval_run.label}: helpfulness"
    assert len(items) == 5 and Assignment.objects.filter(item__task=task).count() == 10
    for item in items:
        assert item.source_kind == SourceKind.BENCHMARK and item.rollout_id is None
        assert item.prompt == f"{item.source['problem_id']}: 2+2=" and item.reference_answer == "4"
        assert item.source["eval_run"] == eval_run.pk and item.source["benchmark"] == "addition"
        assert item.completion == (" 4" if item.correct else " <b>5</b>")
        assert item.reward == (1.0 if item.correct else 0.0)


def test_the_sampling_rule_applies_to_benchmark_samples(
    eval_run: EvalRun, rubric: Rubric, alice: User
) -> None:
    task = task_create_from_eval(
        eval_run=eval_run,
        rubric=rubric,
        actor=alice,
        annotators_per_item=1,
        sampling={"n": 100, "only_incorrect": True},
    )
    assert (
        task.items.count() == 6 and not task.items.filter(correct=True).exists()
    )  # 2 wrong of 4, 3 problems
    again = task_create_from_eval(
        eval_run=eval_run,
        rubric=rubric,
        actor=alice,
        annotators_per_item=1,
        sampling={"n": 4, "strategy": "stratified", "strata": 2, "seed": 1},
    )
    assert sorted(again.items.values_list("correct", flat=True)) == [False, False, True, True]


def test_the_api_takes_an_evaluation_or_a_run_not_both(
    eval_run: EvalRun, rubric: Rubric, alice: User, project: Project, api: Callable[[User | None], APIClient]
) -> None:
    client = api(alice)
    url = f"/api/projects/{project.pk}/annotation-tasks/"
    made = client.post(
        url,
        {"eval_run": eval_run.pk, "rubric": rubric.pk, "annotators_per_item": 1, "sampling": {"n": 3}},
        format="json",
    )
    assert made.status_code == 201, made.json()
    assert AnnotationTask.objects.get(pk=made.json()["id"]).source_kind == SourceKind.BENCHMARK
    for body in ({"rubric": rubric.pk}, {"rubric": rubric.pk, "eval_run": eval_run.pk, "run": 1}):
        refused = client.post(url, body, format="json")
        assert refused.status_code == 400 and "either run" in refused.json()["message"]


def test_admins_create_a_task_from_the_evaluation_page(
    eval_run: EvalRun, rubric: Rubric, browser_as: Callable[[str | None], Client]
) -> None:
    owner = browser_as("owner")
    page = owner.get(f"/evals/{eval_run.pk}/").content.decode()
    assert f'href="/evals/{eval_run.pk}/annotate/new/"' in page
    form = owner.get(f"/evals/{eval_run.pk}/annotate/new/")
    assert form.status_code == 200 and "Annotate samples of addition" in form.content.decode()
    created = owner.post(f"/evals/{eval_run.pk}/annotate/new/", {
        "rubric": rubric.pk, "strategy": "random", "n": 4, "seed": 0, "strata": 4, "annotators_per_item": 1,
    })  # fmt: skip
    task = AnnotationTask.objects.get()
    assert created.status_code == 302 and created["Location"] == f"/annotation/{task.pk}/"
    detail = owner.get(f"/annotation/{task.pk}/").content.decode()
    assert f'href="/evals/{eval_run.pk}/"' in detail  # the source links back to the evaluation
    assert AnnotationItem.objects.filter(task=task).count() == 4


@pytest.mark.parametrize(
    ("role", "status"), [("admin", 200), ("annotator", 403), ("viewer", 403), ("outsider", 404)]
)
def test_the_new_task_page_needs_an_admin(
    role: str, status: int, eval_run: EvalRun, browser_as: Callable[[str | None], Client]
) -> None:
    client = browser_as(role)
    assert client.get(f"/evals/{eval_run.pk}/annotate/new/").status_code == status
    if role in ("annotator", "viewer"):
        assert "/annotate/new/" not in client.get(f"/evals/{eval_run.pk}/").content.decode()
