"""Pairwise pages per role (outsiders 404, viewers 403, annotators their queue, owners and admins create,
review and adjudicate), the "Pairwise preferences" entry next to rubric scoring, the pairs-file form, and
model text escaped everywhere."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from django.contrib.auth.models import User
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client

from tests.webapp.annotation.pairwise_helpers import judge
from tests.webapp.annotation.test_task_from_benchmark import eval_run  # noqa: F401 -- fixture
from webapp.annotation.models import AnnotationTask, PairwiseAdjudication
from webapp.annotation.services_pairwise import pairwise_task_create_from_run
from webapp.benchmarks.models import EvalRun
from webapp.experiments.models import Rollout, Run
from webapp.teams.models import Project

ROLES = ["owner", "admin", "annotator", "viewer", "outsider"]
RANK = {"outsider": -1, "viewer": 0, "annotator": 1, "admin": 2, "owner": 3}
XSS = '<script>window.__x=1</script><img src=x onerror="window.__y=1">'


def status_for(role: str, minimum: str) -> int:
    return 404 if role == "outsider" else 200 if RANK[role] >= RANK[minimum] else 403


@pytest.fixture
def task(run_with_rollouts: Run, alice: User, annotators: list[User]) -> AnnotationTask:
    Rollout.objects.filter(run=run_with_rollouts).update(completion=XSS)
    task = pairwise_task_create_from_run(
        run=run_with_rollouts, actor=alice, pairing={"n": 4}, annotators=["dana", "erin"]
    )
    judge(
        task,
        {u.username: u for u in annotators},
        {0: {"dana": "left", "erin": "right"}, 1: {"dana": "tie", "erin": "tie"}},
    )
    return task


@pytest.mark.parametrize("role", ROLES)
def test_pages_answer_by_role(
    role: str, task: AnnotationTask, browser_as: Callable[[str | None], Client]
) -> None:
    client = browser_as(role)
    assert client.get(f"/annotation/{task.pk}/").status_code == status_for(role, "annotator")
    assert client.get(f"/annotation/{task.pk}/annotate/").status_code == status_for(role, "annotator")
    assert client.get(f"/annotation/{task.pk}/disagreements/").status_code == status_for(role, "admin")
    assert client.get(f"/runs/{task.run_id}/annotate/new/?kind=pairwise").status_code == status_for(
        role, "admin"
    )


def test_the_task_page_shows_agreement_final_decisions_and_escapes_model_text(
    task: AnnotationTask, browser_as: Callable[[str | None], Client]
) -> None:
    page = browser_as("owner").get(f"/annotation/{task.pk}/").content.decode()
    assert (
        "Share of agreeing pairs" in page
        and "Cohen's kappa" in page
        and "not enough shared items" in page.lower()
    )
    assert "“both bad” says neither completion is acceptable" in page
    assert (
        'id="pw-summary-line">0 preference pairs exported (0 left, 0 right); left out: 1 tie, 0 both bad, 3 unresolved.'
        in page
    )
    review = browser_as("owner").get(f"/annotation/{task.pk}/disagreements/").content.decode()
    assert "<script>window.__x" not in review and "&lt;script&gt;window.__x=1&lt;/script&gt;" in review
    assert 'data-position="0"' in review and 'data-position="1"' not in review  # the tie is agreed


def test_the_annotate_page_hands_model_text_over_as_json_only(
    task: AnnotationTask,
    annotators: list[User],
    browser_as: Callable[[str | None], Client],
    join: Callable[[User, str | None], User],
) -> None:
    client = Client()
    client.force_login(annotators[0])
    page = client.get(f"/annotation/{task.pk}/annotate/").content.decode()
    assert (
        "<script>window.__x" not in page
        and "\\u003Cscript\\u003E" in page
        and "annotation_pairwise.js" in page
    )


def test_the_new_task_page_offers_pairwise_next_to_rubric_scoring(
    run_with_rollouts: Run, annotators: list[User], browser_as: Callable[[str | None], Client]
) -> None:
    client = browser_as("owner")
    rubric_page = client.get(f"/runs/{run_with_rollouts.pk}/annotate/new/").content.decode()
    assert "Pairwise preferences" in rubric_page and "?kind=pairwise" in rubric_page
    url = f"/runs/{run_with_rollouts.pk}/annotate/new/?kind=pairwise"
    response = client.post(url, {"name": "prefs", "n": 3, "seed": 0, "annotators_per_item": 2, "step": 2})
    assert response.status_code == 302, response.content.decode()[:2000]
    made = AnnotationTask.objects.get(name="prefs")
    assert (
        made.kind == "pairwise"
        and made.items.count() == 3
        and set(made.items.values_list("source_step", flat=True)) == {2}
    )
    bad = client.post(url, {"n": 3, "seed": 0, "annotators_per_item": 2, "step": 40})
    assert bad.status_code == 200 and "no rollouts at step 40" in bad.content.decode()


def test_the_list_page_creates_a_task_from_a_pairs_file(
    project: Project, annotators: list[User], browser_as: Callable[[str | None], Client]
) -> None:
    client = browser_as("owner")
    assert (
        "New pairwise task from a pairs file"
        in client.get(f"/projects/{project.pk}/annotation/").content.decode()
    )
    url = f"/projects/{project.pk}/annotation/pairs-file/"
    good = SimpleUploadedFile("prefs.jsonl", b'{"prompt": "p", "chosen": "a", "rejected": "b"}\n')
    response = client.post(url, {"file": good, "seed": 0, "annotators_per_item": 2})
    task = AnnotationTask.objects.get()
    assert response.status_code == 302 and response["Location"] == f"/annotation/{task.pk}/"
    bad = SimpleUploadedFile("bad.jsonl", b'{"prompt": "p"}\n')
    response = client.post(url, {"file": bad, "seed": 0, "annotators_per_item": 2}, follow=True)
    assert "bad.jsonl, line 1: &#x27;completion_a&#x27; is missing or empty" in response.content.decode()
    viewer = browser_as("viewer")
    assert (
        viewer.post(
            url, {"file": SimpleUploadedFile("p.jsonl", b"{}"), "seed": 0, "annotators_per_item": 1}
        ).status_code
        == 403
    )


def test_the_owner_adjudicates_from_the_disagreements_page(
    task: AnnotationTask, browser_as: Callable[[str | None], Client]
) -> None:
    item = task.items.get(position=0)
    back = f"/annotation/{task.pk}/disagreements/"
    response = browser_as("owner").post(f"/annotation/{task.pk}/items/{item.pk}/adjudicate/",
                                        {"choice": "right", "note": "cleaner", "next": back})  # fmt: skip
    assert response.status_code == 302 and response["Location"] == back
    assert PairwiseAdjudication.objects.get(item=item).choice == "right"
    annotator = browser_as("annotator")
    assert (
        annotator.post(f"/annotation/{task.pk}/items/{item.pk}/adjudicate/", {"choice": "left"}).status_code
        == 403
    )


def test_an_evaluation_offers_pairwise_preferences_too(
    eval_run: EvalRun,  # noqa: F811 -- the fixture imported above
    annotators: list[User],
    browser_as: Callable[[str | None], Client],
) -> None:
    client = browser_as("owner")
    url = f"/evals/{eval_run.pk}/annotate/new/?kind=pairwise"
    page = client.get(url).content.decode()
    assert 'name="step"' not in page and "samples of one problem" in page
    response = client.post(url, {"name": "eval prefs", "n": 4, "seed": 1, "annotators_per_item": 2})
    assert response.status_code == 302
    task = AnnotationTask.objects.get(name="eval prefs")
    assert task.source_kind == "benchmark" and task.items.count() == 4
    assert "of evaluation #" in client.get(f"/annotation/{task.pk}/").content.decode()
