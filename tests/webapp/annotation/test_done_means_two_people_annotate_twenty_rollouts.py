"""Issue 6's "Done means", at the service level: a rubric with a rule criterion and a judge criterion,
20 rollouts annotated by two people, agreement computed (people-vs-people and machine-vs-people)."""

from __future__ import annotations

import krippendorff
import numpy as np
import pytest
from django.contrib.auth.models import User

from webapp.annotation.models import Assignment
from webapp.annotation.selectors import task_agreement, task_progress
from webapp.annotation.services import assignment_submit, task_create_from_run
from webapp.experiments.models import Run
from webapp.rubrics.models import Rubric

ERIN_DISAGREES_ON = {3, 11}  # item positions where erin flips has_answer and moves clarity by one


def test_twenty_rollouts_two_annotators_agreement_per_criterion(
    run_with_rollouts: Run, rubric: Rubric, alice: User, annotators: list[User]
) -> None:
    dana, erin = annotators
    task = task_create_from_run(
        run=run_with_rollouts, rubric=rubric, actor=alice, sampling={"strategy": "random", "n": 20, "seed": 7},
        annotators=["dana", "erin"], annotators_per_item=2,
    )  # fmt: skip
    items = list(task.items.order_by("position"))
    assert len(items) == 20

    expected: dict[str, list[list[float]]] = {"has_answer": [[], []], "clarity": [[], []]}
    for item in items:
        machine_answer = item.machine_scores["has_answer"]["score"]
        machine_clarity = item.machine_scores["clarity"]["score"]
        for who, person in enumerate((dana, erin)):
            flip = who == 1 and item.position in ERIN_DISAGREES_ON
            answer = 1 - machine_answer if flip else machine_answer
            clarity = (machine_clarity % 5) + 1 if flip else machine_clarity
            expected["has_answer"][who].append(answer)
            expected["clarity"][who].append(clarity)
            work = Assignment.objects.get(item=item, annotator=person)
            assignment_submit(
                assignment=work, actor=person, scores={"has_answer": answer, "clarity": clarity, "tone": 5}
            )

    progress = {row["annotator"]: row for row in task_progress(task=task)}
    assert progress["dana"]["submitted"] == progress["erin"]["submitted"] == 20
    assert progress["dana"]["done_fraction"] == 1.0

    rows = {row["criterion"]: row for row in task_agreement(task=task)}
    for name, level in (("has_answer", "nominal"), ("clarity", "ordinal")):
        human = rows[name]["human"]
        assert human["items"] == 20 and human["level"] == level
        reference = krippendorff.alpha(reliability_data=np.array(expected[name]), level_of_measurement=level)
        assert human["alpha"] == pytest.approx(reference)
        assert 0.5 < human["alpha"] < 1.0  # two disagreements in twenty

    # has_answer: dana always matches the rule; on erin's two flips the pair splits evenly (no majority)
    rule = rows["has_answer"]["judge_vs_human"]
    assert (rule["items"], rule["ties"], rule["exact_agreement"], rule["alpha"]) == (
        18,
        2,
        1.0,
        pytest.approx(1.0),
    )
    # clarity: the consensus is the rounded mean; on a flip it moves up by half a point or more
    judge = rows["clarity"]["judge_vs_human"]
    assert judge["items"] == 20 and judge["ties"] == 0
    assert judge["exact_agreement"] == pytest.approx(18 / 20)
    assert judge["alpha"] is not None and judge["alpha"] < 1.0
    # the people-only criterion has no machine comparison; everyone gave 5, so alpha is undefined
    assert rows["tone"]["judge_vs_human"] is None
    assert rows["tone"]["human"]["alpha"] is None and "no variation" in rows["tone"]["human"]["note"]
