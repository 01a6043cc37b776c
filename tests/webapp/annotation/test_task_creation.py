"""Creating a task from a run: sampled items snapshot the rollouts (machine scores included) and each item
goes to k distinct annotators, balanced."""

from __future__ import annotations

from collections import Counter

import pytest
from django.contrib.auth.models import User
from django.core.exceptions import PermissionDenied

from webapp.annotation.models import AnnotationItem, Assignment
from webapp.annotation.services import task_create_from_run
from webapp.core.errors import ApplicationError, InvalidInput
from webapp.experiments.models import Rollout, Run
from webapp.rubrics.models import Rubric


def test_items_snapshot_prompt_completion_reference_source_and_machine_scores(
    run_with_rollouts: Run, rubric: Rubric, alice: User, annotators: list[User]
) -> None:
    task = task_create_from_run(
        run=run_with_rollouts, rubric=rubric, actor=alice, sampling={"n": 5, "seed": 4}
    )
    item = task.items.first()
    assert item is not None
    rollout = Rollout.objects.get(pk=item.source_rollout_id)
    assert (item.prompt, item.completion, item.reference_answer) == (rollout.prompt, rollout.completion, "4")
    assert (item.source_run_id, item.source_step, item.reward) == (
        run_with_rollouts.pk,
        rollout.step,
        rollout.reward,
    )
    assert set(item.machine_scores) == {"has_answer", "clarity"}  # the people-only criterion has none
    assert item.machine_scores["clarity"]["scorer"] == "judge"
    assert item.machine_scores["clarity"]["score"] == 1 + (rollout.group + rollout.sample_index) % 5
    assert [c["name"] for c in task.criteria] == ["has_answer", "clarity", "tone"]


def test_each_item_gets_k_distinct_annotators_balanced_across_members(
    run_with_rollouts: Run, rubric: Rubric, alice: User, annotators: list[User]
) -> None:
    task = task_create_from_run(
        run=run_with_rollouts, rubric=rubric, actor=alice, sampling={"n": 10}, annotators_per_item=2
    )
    per_item = Counter(Assignment.objects.filter(item__task=task).values_list("item_id", flat=True))
    assert len(per_item) == 10 and set(per_item.values()) == {2}
    load = Counter(Assignment.objects.filter(item__task=task).values_list("annotator__username", flat=True))
    assert set(load) == {"alice", "dana", "erin"}  # the owner annotates too
    assert max(load.values()) - min(load.values()) <= 1 and sum(load.values()) == 20


def test_only_the_named_annotators_are_assigned(
    run_with_rollouts: Run, rubric: Rubric, alice: User, annotators: list[User]
) -> None:
    task = task_create_from_run(
        run=run_with_rollouts, rubric=rubric, actor=alice, sampling={"n": 4}, annotators=["dana", "erin"]
    )
    assert set(Assignment.objects.filter(item__task=task).values_list("annotator__username", flat=True)) == {
        "dana",
        "erin",
    }


def test_viewers_are_never_assigned_and_cannot_be_named(
    run_with_rollouts: Run, rubric: Rubric, alice: User, bob: User, join: object, annotators: list[User]
) -> None:
    join(bob, "viewer")  # type: ignore[operator]
    task = task_create_from_run(run=run_with_rollouts, rubric=rubric, actor=alice, sampling={"n": 4})
    assert not Assignment.objects.filter(item__task=task, annotator=bob).exists()
    with pytest.raises(InvalidInput, match="bob cannot annotate"):
        task_create_from_run(run=run_with_rollouts, rubric=rubric, actor=alice, annotators=["bob", "dana"])


def test_only_owners_and_admins_create_tasks(
    run_with_rollouts: Run, rubric: Rubric, annotators: list[User]
) -> None:
    with pytest.raises(PermissionDenied):
        task_create_from_run(run=run_with_rollouts, rubric=rubric, actor=annotators[0])


def test_k_above_the_number_of_annotators_is_refused_and_nothing_is_stored(
    run_with_rollouts: Run, rubric: Rubric, alice: User, annotators: list[User]
) -> None:
    with pytest.raises(ApplicationError, match="needs 4 different annotators"):
        task_create_from_run(run=run_with_rollouts, rubric=rubric, actor=alice, annotators_per_item=4)
    assert not AnnotationItem.objects.exists()


def test_a_rule_nothing_matches_says_how_to_loosen_it(run: Run, rubric: Rubric, alice: User) -> None:
    with pytest.raises(ApplicationError, match="loosen"):
        task_create_from_run(run=run, rubric=rubric, actor=alice, annotators_per_item=1)
