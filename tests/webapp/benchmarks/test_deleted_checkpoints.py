"""Checkpoints whose files ``checkpoint.save_total_limit`` deleted: listed as deleted, never offered, and an
evaluation of one is refused at launch (it used to be queued and fail on the worker with "does not exist")."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from django.contrib.auth.models import User
from rest_framework.test import APIClient

from webapp.benchmarks.models import Benchmark, EvalRun
from webapp.benchmarks.selectors import eval_target_choices
from webapp.experiments.models import Checkpoint, Run

Api = Callable[[User | None], APIClient]


@pytest.fixture
def kept_and_deleted(run: Run, tmp_path: Path) -> tuple[Checkpoint, Checkpoint]:
    """Step 200 was pruned (its row stays, its folder is gone); step 400 is on disk."""
    (tmp_path / "step-000400").mkdir()
    deleted = Checkpoint.objects.create(run=run, step=200, path=str(tmp_path / "step-000200"))
    kept = Checkpoint.objects.create(run=run, step=400, path=str(tmp_path / "step-000400"))
    return kept, deleted


def test_the_evaluate_form_marks_deleted_checkpoints(
    benchmark: Benchmark, kept_and_deleted: tuple[Checkpoint, Checkpoint]
) -> None:
    (target,) = eval_target_choices(project=benchmark.project)
    assert [(c["step"], c["deleted"]) for c in target["checkpoints"]] == [(200, True), (400, False)]


def test_evaluating_a_deleted_checkpoint_is_refused_in_the_api_error_shape(
    api: Api,
    alice: User,
    benchmark: Benchmark,
    kept_and_deleted: tuple[Checkpoint, Checkpoint],
    no_enqueue: None,
) -> None:
    kept, deleted = kept_and_deleted
    response = api(alice).post(
        f"/api/benchmarks/{benchmark.pk}/evals/", {"checkpoints": [kept.pk, deleted.pk]}, format="json"
    )
    assert response.status_code == 400
    body = response.json()
    assert set(body) == {"message", "extra"}
    assert "step 200" in body["message"] and "save_total_limit" in body["message"]
    assert body["extra"]["fields"]["checkpoints"] == [body["message"]]
    assert not EvalRun.objects.exists()  # nothing queued, not even the kept one


def test_the_run_checkpoint_list_says_which_are_deleted(
    api: Api, alice: User, run: Run, kept_and_deleted: tuple[Checkpoint, Checkpoint]
) -> None:
    rows = api(alice).get(f"/api/runs/{run.pk}/checkpoints/").json()
    rows = rows["results"] if isinstance(rows, dict) else rows
    assert [(r["step"], r["deleted"]) for r in rows] == [(200, True), (400, False)]
