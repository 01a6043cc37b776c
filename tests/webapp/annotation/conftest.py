"""Annotation fixtures: a rubric with a rule, a judge and a people-only criterion, and a run whose stored
rollouts carry rubric/<criterion> scores the way the trainer's rubric scorer records them."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from django.contrib.auth.models import User

from tests.webapp.helpers import make_user, rollout_record
from tests.webapp.pages.conftest import browser_as  # noqa: F401 -- fixture, shared with the page tests
from webapp.experiments.models import Run
from webapp.rubrics.models import Criterion, Rubric
from webapp.teams.models import Project


@pytest.fixture
def rubric(project: Project, alice: User) -> Rubric:
    rubric = Rubric.objects.create(project=project, name="helpfulness", created_by=alice)
    Criterion.objects.create(
        rubric=rubric, position=0, name="has_answer", scale="binary", min_value=0, max_value=1, scorer="rule",
        rule={"type": "regex", "params": {"pattern": r"\d"}},
    )  # fmt: skip
    Criterion.objects.create(
        rubric=rubric, position=1, name="clarity", scale="likert5", min_value=1, max_value=5, scorer="judge",
        judge={"prompt_template": "Rate {completion} 1-5", "parse_pattern": r"(\d)"},
    )  # fmt: skip
    Criterion.objects.create(
        rubric=rubric, position=2, name="tone", scale="range", min_value=0, max_value=10, scorer="human"
    )
    return rubric


def store_rollouts(run: Run, *, steps: int = 3, groups: int = 2, samples: int = 4) -> None:
    """``steps`` x ``groups`` x ``samples`` rollouts with rubric scores: has_answer (rule) = sample is even,
    clarity (judge) = 1 + (group + sample) % 5; reward falls with the sample index."""
    from webapp.experiments.services import run_record_step

    for step in range(1, steps + 1):
        records = []
        for g in range(groups):
            for s in range(samples):
                has_answer = float(s % 2 == 0)
                clarity = float(1 + (g + s) % 5)
                records.append(
                    rollout_record(
                        step,
                        g,
                        s,
                        completion=f"=cmd|' /C calc'!A0 step {step} sample {s}"
                        if s == 3
                        else f"The answer is {g + s}",
                        reward=1.0 - s / samples,
                        correct=s % 2 == 0,
                        rewards={
                            "exact": has_answer,
                            "rubric/has_answer": has_answer,
                            "rubric/clarity": (clarity - 1) / 4,
                        },
                        details={
                            "rubric/has_answer": {"score": has_answer, "reason": "regex"},
                            "rubric/clarity": {"score": clarity, "raw": f"Score: {clarity:g}"},
                        },
                    )
                )
        run_record_step(run_id=run.pk, step=step, max_steps=run.max_steps, metrics={}, rollouts=records)


@pytest.fixture
def run_with_rollouts(run: Run) -> Run:
    store_rollouts(run)
    return run


@pytest.fixture
def annotators(join: Callable[[User, str | None], User]) -> list[User]:
    """dana and erin annotate in alice's project (alice, the owner, can annotate too)."""
    return [join(make_user("dana"), "annotator"), join(make_user("erin"), "annotator")]


# position -> annotator -> (has_answer, clarity, tone): item 2 is the most disputed overall (clarity 1 vs 5,
# tone 0 vs 10), item 1 only on has_answer, item 3 a little on clarity and tone, items 0 and 4 agree, and
# only dana has submitted item 5 (erin's stays pending).
SCORES: dict[int, dict[str, tuple[float, float, float]]] = {
    0: {"dana": (1, 3, 5), "erin": (1, 3, 5)},
    1: {"dana": (1, 4, 5), "erin": (0, 4, 5)},
    2: {"dana": (0, 1, 0), "erin": (0, 5, 10)},
    3: {"dana": (1, 2, 4), "erin": (1, 3, 6)},
    4: {"dana": (0, 5, 7), "erin": (0, 5, 7)},
    5: {"dana": (1, 4, 8)},
}


@pytest.fixture
def scored_task(run_with_rollouts: Run, rubric: Rubric, alice: User, annotators: list[User]) -> Any:
    """Six items, each assigned to dana and erin, submitted as in ``SCORES`` (with a comment on item 2)."""
    from webapp.annotation.models import Assignment
    from webapp.annotation.services import assignment_submit, task_create_from_run

    task = task_create_from_run(
        run=run_with_rollouts, rubric=rubric, actor=alice, sampling={"n": 6, "seed": 0},
        annotators=["dana", "erin"], annotators_per_item=2,
    )  # fmt: skip
    people = {u.username: u for u in annotators}
    for item in task.items.order_by("position"):
        for name, (answer, clarity, tone) in SCORES[item.position].items():
            work = Assignment.objects.get(item=item, annotator=people[name])
            comment = f"{name} thinks <b>this</b> is unclear" if item.position == 2 else ""
            scores = {"has_answer": answer, "clarity": clarity, "tone": tone}
            assignment_submit(assignment=work, actor=people[name], scores=scores, comment=comment)
    return task
