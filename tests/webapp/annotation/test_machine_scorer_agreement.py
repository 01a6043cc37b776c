"""Any machine scorer against the people: Spearman and Pearson on hand-computed numbers, alpha from the
krippendorff package, the scorers a task's items have (training-time, reward components, the task
rubric's, scoring jobs'), and the agreement of one that is not the training rubric."""

from __future__ import annotations

import math
from collections.abc import Callable

import krippendorff
import numpy as np
import pytest
from django.contrib.auth.models import User
from rest_framework.test import APIClient

from webapp.annotation.agreement import average_ranks, pearson, scorer_vs_people, spearman
from webapp.annotation.machine_scorers import machine_agreement, machine_table, people_means
from webapp.annotation.models import AnnotationTask, ItemScore, ScoringJob, ScoringStatus
from webapp.core.errors import InvalidInput

Api = Callable[[User | None], APIClient]


def test_tied_values_share_the_mean_of_their_ranks() -> None:
    assert list(average_ranks(np.array([3.0, 1.0, 3.0, 2.0]))) == [3.5, 1.0, 3.5, 2.0]


def test_pearson_and_spearman_on_hand_computed_values() -> None:
    x, y = np.array([1.0, 2.0, 3.0]), np.array([1.0, 3.0, 2.0])
    assert pearson(x, y) == pytest.approx(0.5)  # deviations (-1, 0, 1) and (-1, 1, 0): 1 / sqrt(2 * 2)
    assert spearman(x, y) == pytest.approx(0.5)
    # ties: ranks of (1, 2, 2, 3) are (1, 2.5, 2.5, 4); against (1, 2, 3, 4): 4.5 / sqrt(4.5 * 5) = 3 / sqrt(10)
    assert spearman(np.array([1.0, 2.0, 2.0, 3.0]), np.array([1.0, 2.0, 3.0, 4.0])) == pytest.approx(
        3 / math.sqrt(10)
    )
    assert spearman(np.array([1.0, 2.0, 3.0]), np.array([1.0, 4.0, 9.0])) == pytest.approx(1.0)  # monotone
    curved = pearson(np.array([1.0, 2.0, 3.0]), np.array([1.0, 4.0, 9.0]))
    assert curved is not None and curved < 1.0


def test_a_constant_side_has_no_correlation_and_says_why() -> None:
    result = scorer_vs_people({1: 1.0, 2: 1.0, 3: 1.0}, {1: 0.2, 2: 0.5, 3: 0.9})
    assert result.spearman is None and result.pearson is None and result.items == 3
    assert "same score from the machine" in result.note


def test_scorer_vs_people_uses_the_items_with_both_and_alpha_from_the_package() -> None:
    machine = {1: 0.0, 2: 1.0, 3: 1.0, 4: 0.0, 9: 1.0}  # item 9: nobody scored it
    people = {1: 0.25, 2: 0.75, 3: 1.0, 4: 0.5, 5: 0.5}  # item 5: no machine score
    result = scorer_vs_people(machine, people)
    assert result.items == 4
    expected = krippendorff.alpha(
        reliability_data=np.array([[0, 1, 1, 0], [0.25, 0.75, 1.0, 0.5]]), level_of_measurement="interval"
    )
    assert result.alpha == pytest.approx(expected)
    assert result.pearson == pytest.approx(float(np.corrcoef([0, 1, 1, 0], [0.25, 0.75, 1.0, 0.5])[0, 1]))


def test_no_common_item_gives_no_figures() -> None:
    result = scorer_vs_people({1: 1.0}, {2: 0.5})
    assert (result.alpha, result.spearman, result.items) == (None, None, 0) and result.note


def test_people_means_are_normalised_by_the_scale_and_overall_is_the_weighted_mean(
    scored_task: AnnotationTask,
) -> None:
    by_position = {i.pk: i.position for i in scored_task.items.all()}
    clarity = {by_position[k]: v for k, v in people_means(task=scored_task, criterion="clarity").items()}
    assert clarity == {0: 0.5, 1: 0.75, 2: 0.5, 3: 0.375, 4: 1.0, 5: 0.75}  # (mean - 1) / 4
    overall = {by_position[k]: v for k, v in people_means(task=scored_task, criterion="overall").items()}
    # item 2, weights 1: dana (0 + 0 + 0) / 3 = 0, erin (0 + 1 + 1) / 3 = 2/3 -> 1/3
    assert overall[2] == pytest.approx(1 / 3)
    with pytest.raises(InvalidInput):
        people_means(task=scored_task, criterion="nope")


def test_the_task_offers_training_time_component_rubric_and_job_scorers(
    scored_task: AnnotationTask, alice: User
) -> None:
    scorers, _ = machine_table(task=scored_task)
    keys = {s.key: s for s in scorers}
    assert {"reward", "correct", "component:exact", "component:rubric/has_answer", "component:rubric/clarity",
            "criterion:has_answer", "criterion:clarity"} <= set(keys)  # fmt: skip
    assert all(s.items == 6 for s in scorers)
    assert (keys["criterion:clarity"].low, keys["criterion:clarity"].high) == (1.0, 5.0)
    assert keys["reward"].low is None  # a total reward has no known scale
    job = ScoringJob.objects.create(
        task=scored_task, kind="verifier", label="Verifier boxed v1", status=ScoringStatus.SUCCEEDED
    )
    ItemScore.objects.bulk_create(
        ItemScore(job=job, item=i, key="reward", score=1.0) for i in scored_task.items.all()[:4]
    )
    queued = ScoringJob.objects.create(
        task=scored_task, kind="verifier", label="Verifier other v1"
    )  # not finished
    ItemScore.objects.create(job=queued, item=scored_task.items.get(position=0), key="reward", score=0.0)
    scorers, _ = machine_table(task=scored_task)
    jobs = [s for s in scorers if s.key.startswith("job:")]
    assert [(s.key, s.label, s.group, s.items) for s in jobs] == [
        (f"job:{job.pk}:reward", f"Verifier boxed v1 (job #{job.pk})", "Scored for this task", 4)
    ]


def test_agreement_of_a_scorer_that_is_not_the_training_rubric_on_known_numbers(
    scored_task: AnnotationTask, alice: User, api: Api
) -> None:
    """A verifier scored by a job: 0/1 per item against the people's clarity (0.5, 0.75, 0.5, 0.375, 1, 0.75)."""
    job = ScoringJob.objects.create(
        task=scored_task, kind="verifier", label="Verifier v1", status=ScoringStatus.SUCCEEDED
    )
    machine = {0: 0.0, 1: 1.0, 2: 0.0, 3: 0.0, 4: 1.0, 5: 1.0}
    items = {i.position: i for i in scored_task.items.all()}
    ItemScore.objects.bulk_create(
        ItemScore(job=job, item=items[p], key="reward", score=v) for p, v in machine.items()
    )
    people = [0.5, 0.75, 0.5, 0.375, 1.0, 0.75]
    result = machine_agreement(task=scored_task, scorer=f"job:{job.pk}:reward", criterion="clarity")
    assert result["items"] == 6 and result["normalised"] is False
    assert result["pearson"] == pytest.approx(float(np.corrcoef(list(machine.values()), people)[0, 1]))
    # ranks: machine (2, 5, 2, 2, 5, 5); people (2.5, 4.5, 2.5, 1, 6, 4.5)
    assert result["spearman"] == pytest.approx(
        float(np.corrcoef([2, 5, 2, 2, 5, 5], [2.5, 4.5, 2.5, 1, 6, 4.5])[0, 1])
    )
    reference = krippendorff.alpha(
        reliability_data=np.array([list(machine.values()), people]), level_of_measurement="interval"
    )
    assert result["alpha"] == pytest.approx(reference)

    body = (
        api(alice)
        .get(
            f"/api/annotation-tasks/{scored_task.pk}/machine-agreement/?scorer=job:{job.pk}:reward&criterion=clarity"
        )
        .json()
    )
    assert (
        body["alpha"] == pytest.approx(reference)
        and body["items"] == 6
        and body["scorer"]["label"].startswith("Verifier v1")
    )


def test_a_scorer_with_a_known_scale_is_normalised_before_alpha(scored_task: AnnotationTask) -> None:
    result = machine_agreement(task=scored_task, scorer="criterion:clarity", criterion="clarity")
    assert result["normalised"] is True and result["items"] == 6
    assert result["alpha"] is not None and -1.0 <= result["alpha"] <= 1.0


def test_an_unknown_scorer_is_a_400_listing_the_available_ones(
    scored_task: AnnotationTask, alice: User, api: Api
) -> None:
    response = api(alice).get(
        f"/api/annotation-tasks/{scored_task.pk}/machine-agreement/?scorer=job:999:reward"
    )
    assert response.status_code == 400
    assert "scorer" in response.json()["extra"]["fields"] and "component:exact" in response.json()["message"]


@pytest.mark.parametrize(
    ("role", "status"), [("admin", 200), ("annotator", 403), ("viewer", 403), ("outsider", 404)]
)
def test_machine_scorers_are_for_owners_and_admins(
    role: str,
    status: int,
    scored_task: AnnotationTask,
    charlie: User,
    join: Callable[[User, str | None], User],
    api: Api,
) -> None:
    join(charlie, None if role == "outsider" else role)
    response = api(charlie).get(f"/api/annotation-tasks/{scored_task.pk}/machine-scorers/")
    assert response.status_code == status
    if status == 200:
        assert "reward" in {s["key"] for s in response.json()}
