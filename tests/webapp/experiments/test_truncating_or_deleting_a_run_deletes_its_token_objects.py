"""Steps dropped before a resume take their token objects with them, and so does a deleted run; the
objects go after commit, and not at all when the transaction rolls back."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import User
from django.db import transaction

from tests.webapp.helpers import record_steps
from webapp.experiments.models import Experiment, Rollout, Run
from webapp.experiments.services import experiment_delete, run_truncate_after
from webapp.experiments.token_store import run_prefix, token_store


def stored_bytes(run: Run) -> int:
    return token_store().total_bytes(run_prefix(run.pk))


def test_truncating_deletes_the_objects_of_the_steps_it_removes(
    run: Run, django_capture_on_commit_callbacks: object
) -> None:
    record_steps(run, range(1, 6))
    with django_capture_on_commit_callbacks(execute=True):  # type: ignore[operator]
        run_truncate_after(run_id=run.pk, step=3)
    remaining = Rollout.objects.filter(run=run)
    assert sorted(set(remaining.values_list("step", flat=True))) == [1, 2, 3]
    assert stored_bytes(run) == sum(remaining.values_list("token_size", flat=True))


def test_a_truncation_that_rolls_back_keeps_every_object(run: Run) -> None:
    record_steps(run, range(1, 4))
    before = stored_bytes(run)
    with pytest.raises(RuntimeError), transaction.atomic():
        run_truncate_after(run_id=run.pk, step=1)
        raise RuntimeError("something after it failed")
    assert stored_bytes(run) == before
    assert Rollout.objects.filter(run=run).count() == 12


def test_deleting_an_experiment_deletes_its_runs_objects(
    run: Run, experiment: Experiment, alice: User, django_capture_on_commit_callbacks: object
) -> None:
    record_steps(run, range(1, 3))
    assert stored_bytes(run) > 0
    Run.objects.filter(pk=run.pk).update(status="succeeded")
    with django_capture_on_commit_callbacks(execute=True):  # type: ignore[operator]
        experiment_delete(experiment=experiment, actor=alice)
    assert stored_bytes(run) == 0
