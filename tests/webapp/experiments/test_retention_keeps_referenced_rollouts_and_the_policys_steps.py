"""Pruning by a run's retention policy: steps older than the newest recent_steps keep what the policy
keeps, plus any rollout an annotation item points at or a rescore listed; the rest goes, rows and objects."""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.utils import timezone

from tests.webapp.helpers import record_steps
from webapp.annotation.models import AnnotationItem, AnnotationTask
from webapp.experiments.models import Rollout, Run
from webapp.experiments.retention import Pruner, prune_run
from webapp.experiments.selectors import rollout_detail
from webapp.experiments.token_store import run_prefix, token_store
from webapp.teams.models import Project
from webapp.verification.models import JOB_FINISHED, JobKind, JobStatus, VerificationJob
from webapp.verification.services import verifier_definition_create


def with_policy(run: Run, **policy: Any) -> Run:
    run.retention = policy
    run.save(update_fields=["retention"])
    return run


def steps_kept(run: Run) -> Counter[int]:
    return Counter(Rollout.objects.filter(run=run).values_list("step", flat=True))


def bytes_match_rows(run: Run) -> bool:
    rows = Rollout.objects.filter(run=run).values_list("token_size", flat=True)
    return token_store().total_bytes(run_prefix(run.pk)) == sum(rows)


@pytest.fixture
def committing(django_capture_on_commit_callbacks: Any) -> Any:
    """Runs on-commit hooks (the objects' deletion) at the end of each block: the test never commits."""
    return lambda: django_capture_on_commit_callbacks(execute=True)


def test_every_n_steps_keeps_every_nth_step_and_the_recent_ones(run: Run, committing: Any) -> None:
    record_steps(
        with_policy(run, keep="every_n_steps", every_n_steps=3, recent_steps=2),
        range(1, 11),
        groups=2,
        samples=2,
    )
    with committing():
        deleted = prune_run(run_id=run.pk)
    assert deleted == 4 * 6  # steps 1, 2, 4, 5, 7, 8 go; 3, 6 are kept by the policy, 9 and 10 are recent
    assert steps_kept(run) == {3: 4, 6: 4, 9: 4, 10: 4}
    assert bytes_match_rows(run)
    assert prune_run(run_id=run.pk) == 0  # pruning again changes nothing


def test_sample_per_step_keeps_the_same_k_rollouts_of_each_step_whatever_the_write_order(run: Run) -> None:
    record_steps(
        with_policy(run, keep="sample_per_step", sample_per_step=3, recent_steps=1),
        range(1, 4),
        groups=4,
        samples=4,
    )
    prune_run(run_id=run.pk)
    assert steps_kept(run) == {1: 3, 2: 3, 3: 16}
    first = set(Rollout.objects.filter(run=run, step__lte=2).values_list("step", "group", "sample_index"))
    assert len({(step, group) for step, group, _ in first}) > 2  # spread over the prompts, not group 0's

    from tests.webapp.helpers import rollout_record
    from webapp.experiments.services import run_record_step

    for step in (1, 2):  # the same steps written again, slots in the reverse order
        records = [rollout_record(step, g, s) for g in reversed(range(4)) for s in reversed(range(4))]
        run_record_step(run_id=run.pk, step=step, max_steps=20, metrics={}, rollouts=records)
    prune_run(run_id=run.pk)
    assert (
        set(Rollout.objects.filter(run=run, step__lte=2).values_list("step", "group", "sample_index"))
        == first
    )


def test_kept_rollouts_of_a_thinned_step_are_rewritten_into_a_small_object_and_stay_readable(
    run: Run, committing: Any
) -> None:
    record_steps(
        with_policy(run, keep="sample_per_step", sample_per_step=2, recent_steps=0),
        range(1, 3),
        groups=4,
        samples=4,
    )
    whole_step = token_store().total_bytes(run_prefix(run.pk)) / 2
    with committing():
        prune_run(run_id=run.pk)
    assert bytes_match_rows(run)  # the step objects were replaced by objects of the 2 kept rollouts each
    assert token_store().total_bytes(run_prefix(run.pk)) < whole_step
    for row in Rollout.objects.filter(run=run):
        assert rollout_detail(run=run, rollout_id=row.pk).token_ids == [100, 101, 102, 103]


def test_an_annotated_rollout_is_never_pruned(
    run: Run, project: Project, alice: User, committing: Any
) -> None:
    record_steps(with_policy(run, keep="every_n_steps", every_n_steps=100, recent_steps=1), range(1, 4))
    annotated = Rollout.objects.get(run=run, step=1, group=1, sample_index=0)
    task = AnnotationTask.objects.create(project=project, run=run, name="look", created_by=alice)
    AnnotationItem.objects.create(task=task, position=0, rollout=annotated, prompt="p", completion="c")
    with committing():
        prune_run(run_id=run.pk)
    assert list(Rollout.objects.filter(run=run, step__lt=3).values_list("pk", flat=True)) == [annotated.pk]
    assert rollout_detail(run=run, rollout_id=annotated.pk).token_ids == [100, 101, 102, 103]
    assert bytes_match_rows(run)


def rescore(run: Run, project: Project, alice: User, status: str, rows: list[int]) -> VerificationJob:
    definition = verifier_definition_create(
        project=project, actor=alice, name=f"v{status}", verifier="exact", params={}
    )
    return VerificationJob.objects.create(
        kind=JobKind.RESCORE, version=definition.versions.get(number=1), run=run, status=status,
        result={"rows": [{"rollout": i, "step": 1} for i in rows]},
        finished_at=timezone.now() if status in JOB_FINISHED else None,
    )  # fmt: skip


def test_a_rollout_a_rescore_listed_is_never_pruned(run: Run, project: Project, alice: User) -> None:
    record_steps(with_policy(run, keep="every_n_steps", every_n_steps=100, recent_steps=1), range(1, 4))
    listed = Rollout.objects.get(run=run, step=2, group=0, sample_index=1)
    rescore(run, project, alice, JobStatus.SUCCEEDED, [listed.pk])
    prune_run(run_id=run.pk)
    assert list(Rollout.objects.filter(run=run, step__lt=3).values_list("pk", flat=True)) == [listed.pk]


def test_nothing_is_pruned_while_a_rescore_of_the_run_is_running(
    run: Run, project: Project, alice: User
) -> None:
    record_steps(with_policy(run, keep="every_n_steps", every_n_steps=100, recent_steps=1), range(1, 4))
    job = rescore(run, project, alice, JobStatus.RUNNING, [])
    assert prune_run(run_id=run.pk) == 0
    assert steps_kept(run) == {1: 4, 2: 4, 3: 4}
    VerificationJob.objects.filter(pk=job.pk).update(status=JobStatus.SUCCEEDED, finished_at=timezone.now())
    assert prune_run(run_id=run.pk) == 8


def test_keep_all_deletes_nothing(run: Run) -> None:
    record_steps(run, range(1, 6))
    assert run.retention == {"keep": "all"}  # the default policy (settings.RLVR_ROLLOUT_RETENTION)
    assert prune_run(run_id=run.pk) == 0 and sum(steps_kept(run).values()) == 20


def test_the_step_writer_s_pruner_handles_only_the_steps_that_left_the_window(
    run: Run, django_assert_max_num_queries: Any
) -> None:
    from tests.webapp.helpers import rollout_record
    from webapp.experiments.services import run_record_step

    with_policy(run, keep="every_n_steps", every_n_steps=5, recent_steps=3)
    pruner = Pruner(run.pk)
    for step in range(1, 13):
        run_record_step(
            run_id=run.pk,
            step=step,
            max_steps=20,
            metrics={},
            rollouts=[rollout_record(step, g, 0) for g in range(64)],
        )
        with django_assert_max_num_queries(12):  # one step's worth, however long the run
            pruner.after_step(step)
    assert sorted(steps_kept(run)) == [5, 10, 11, 12]  # 9 (step 12 - 3) and older thinned to every 5th


def test_a_policy_changed_mid_run_is_applied_to_the_whole_run(run: Run) -> None:
    record_steps(run, range(1, 7))
    pruner = Pruner(run.pk)
    assert pruner.after_step(6) == 0  # keep all
    with_policy(run, keep="every_n_steps", every_n_steps=2, recent_steps=1)
    assert pruner.after_step(6) == 4 * 3  # steps 1, 3, 5
    assert sorted(steps_kept(run)) == [2, 4, 6]
