"""Annotation fixtures: a rubric with a rule, a judge and a people-only criterion, and a run whose stored
rollouts carry rubric/<criterion> scores the way the trainer's rubric scorer records them."""

from __future__ import annotations

from collections.abc import Callable

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
                        step, g, s,
                        completion=f"=cmd|' /C calc'!A0 step {step} sample {s}" if s == 3 else f"The answer is {g + s}",
                        reward=1.0 - s / samples,
                        correct=s % 2 == 0,
                        rewards={"exact": has_answer, "rubric/has_answer": has_answer, "rubric/clarity": (clarity - 1) / 4},
                        details={"rubric/has_answer": {"score": has_answer, "reason": "regex"},
                                 "rubric/clarity": {"score": clarity, "raw": f"Score: {clarity:g}"}},
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
