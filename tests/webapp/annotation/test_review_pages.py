"""The review pages (disagreements, one item, one annotator) and their forms: owners and admins only, model
text escaped, prev/next through the task or through the disagreement ranking, adjudication and scoring
forms that redirect back (never off the site)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.test import Client

from webapp.annotation.models import Adjudication, AnnotationItem, AnnotationTask, ScoringJob
from webapp.rubrics.models import Rubric

ROLES = [("owner", 200), ("admin", 200), ("annotator", 403), ("viewer", 403), ("outsider", 404)]


def pages(task: AnnotationTask) -> list[str]:
    item = task.items.get(position=2)
    return [f"/annotation/{task.pk}/disagreements/", f"/annotation/{task.pk}/items/{item.pk}/",
            f"/annotation/{task.pk}/annotators/dana/"]  # fmt: skip


@pytest.mark.parametrize(("role", "status"), ROLES)
def test_review_pages_answer_by_role(
    role: str, status: int, scored_task: AnnotationTask, browser_as: Callable[[str | None], Client]
) -> None:
    client = browser_as(role)
    for url in pages(scored_task):
        response = client.get(url)
        assert response.status_code == status, url
        assert ("ann-adjudicate" in response.content.decode()) == (status == 200 and "/items/" in url)


def test_an_annotator_gets_no_review_links_or_adjudication_on_the_task_page(
    scored_task: AnnotationTask, annotators: list[User]
) -> None:
    client = Client()
    client.force_login(annotators[0])
    html = client.get(f"/annotation/{scored_task.pk}/").content.decode()
    assert "Disagreements" not in html and "ann-machine" not in html and "/annotators/" not in html
    item = scored_task.items.get(position=2)
    response = client.post(
        f"/annotation/{scored_task.pk}/items/{item.pk}/adjudicate/", {"criterion": "tone", "score": "5"}
    )
    assert response.status_code == 403 and not Adjudication.objects.exists()


def test_the_disagreement_page_lists_the_most_disputed_first_with_counts(
    scored_task: AnnotationTask, browser_as: Callable[[str | None], Client]
) -> None:
    html = browser_as("owner").get(f"/annotation/{scored_task.pk}/disagreements/").content.decode()
    top = scored_task.items.get(position=2)
    assert html.index(f'data-item="{top.pk}"') < html.index(
        f'data-item="{scored_task.items.get(position=1).pk}"'
    )
    assert '<span data-count="disputed"><b>3</b> with different scores</span>' in html
    assert f"/annotation/{scored_task.pk}/items/{top.pk}/?via=disagreements" in html
    assert "ann-inline-adjudicate" not in html  # overall ranking: final scores are set per criterion
    by_clarity = (
        browser_as("owner")
        .get(f"/annotation/{scored_task.pk}/disagreements/?criterion=clarity")
        .content.decode()
    )
    assert "ann-inline-adjudicate" in by_clarity and "via=disagreements&amp;criterion=clarity" in by_clarity


def test_an_unknown_criterion_on_the_page_redirects_with_a_message(
    scored_task: AnnotationTask, browser_as: Callable[[str | None], Client]
) -> None:
    response = browser_as("owner").get(
        f"/annotation/{scored_task.pk}/disagreements/?criterion=nope", follow=True
    )
    assert response.status_code == 200 and "No criterion &#x27;nope&#x27;" in response.content.decode()


def test_the_review_page_escapes_model_text_and_shows_every_annotator(
    scored_task: AnnotationTask, browser_as: Callable[[str | None], Client]
) -> None:
    item = scored_task.items.get(position=2)
    AnnotationItem.objects.filter(pk=item.pk).update(completion="<script>window.__x=1</script>")
    html = browser_as("owner").get(f"/annotation/{scored_task.pk}/items/{item.pk}/").content.decode()
    assert "<script>window.__x=1</script>" not in html and "&lt;script&gt;window.__x=1&lt;/script&gt;" in html
    assert "dana thinks &lt;b&gt;this&lt;/b&gt; is unclear" in html
    assert 'data-annotator="dana"' in html and 'data-annotator="erin"' in html
    assert (
        f"/runs/{scored_task.run_id}/rollouts/?step={item.source_step}&amp;rollout={item.rollout_id}" in html
    )


def ids_in_order(task: AnnotationTask, positions: list[int]) -> list[int]:
    by_position = {i.position: i.pk for i in task.items.all()}
    return [by_position[p] for p in positions]


def test_prev_and_next_walk_the_task_or_the_disagreement_ranking(
    scored_task: AnnotationTask, browser_as: Callable[[str | None], Client]
) -> None:
    client = browser_as("owner")
    first, second, third = ids_in_order(scored_task, [2, 1, 3])
    page = client.get(f"/annotation/{scored_task.pk}/items/{second}/")
    assert page.context["nav"] == {
        "prev": ids_in_order(scored_task, [0])[0],
        "next": first,
        "index": 2,
        "total": 6,
    }
    page = client.get(f"/annotation/{scored_task.pk}/items/{second}/?via=disagreements")
    assert page.context["nav"] == {"prev": first, "next": third, "index": 2, "total": 5}
    assert f"/items/{third}/?via=disagreements" in page.content.decode()


def test_the_adjudication_form_sets_the_score_and_goes_back_where_it_came_from(
    scored_task: AnnotationTask, browser_as: Callable[[str | None], Client]
) -> None:
    client = browser_as("owner")
    item = scored_task.items.get(position=2)
    here = f"/annotation/{scored_task.pk}/items/{item.pk}/?via=disagreements"
    response = client.post(f"/annotation/{scored_task.pk}/items/{item.pk}/adjudicate/",
                           {"criterion": "tone", "score": "5", "note": "middle", "next": here})  # fmt: skip
    assert response.status_code == 302 and response["Location"] == here
    assert Adjudication.objects.get(item=item, criterion="tone").score == 5.0
    response = client.post(f"/annotation/{scored_task.pk}/items/{item.pk}/adjudicate/",
                           {"criterion": "tone", "score": "", "clear": "1", "next": "https://evil.example/"})  # fmt: skip
    assert response["Location"] == f"/annotation/{scored_task.pk}/items/{item.pk}/"  # never off the site
    assert not Adjudication.objects.exists()
    page = client.post(f"/annotation/{scored_task.pk}/items/{item.pk}/adjudicate/",
                       {"criterion": "tone", "score": "eleven"}, follow=True)  # fmt: skip
    assert "Give the final score of tone as a number." in page.content.decode()


def test_the_annotator_page_compares_their_scores_with_the_others(
    scored_task: AnnotationTask, browser_as: Callable[[str | None], Client]
) -> None:
    page = browser_as("owner").get(f"/annotation/{scored_task.pk}/annotators/dana/")
    work = page.context["work"]
    assert work["counts"]["submitted"] == 6 and len(work["rows"]) == 6
    summary = {s["criterion"]: s for s in work["summary"]}
    # items 0-4 have erin's scores too: |1-0| on item 1 only -> 1/5; clarity |1-5| + |2-3| = 5 -> 1.0
    assert (summary["has_answer"]["compared"], summary["has_answer"]["mean_abs_diff"]) == (
        5,
        pytest.approx(0.2),
    )
    assert summary["clarity"]["mean_abs_diff"] == pytest.approx(1.0)
    assert browser_as("owner").get(f"/annotation/{scored_task.pk}/annotators/nobody/").status_code == 404


def test_the_task_page_offers_machine_scorers_and_queues_a_scoring_job(
    scored_task: AnnotationTask, rubric: Rubric, browser_as: Callable[[str | None], Client], settings: Any
) -> None:
    settings.RLVR_ENQUEUE = False
    client = browser_as("owner")
    html = client.get(
        f"/annotation/{scored_task.pk}/?scorer=component:exact&criterion=has_answer"
    ).content.decode()
    assert 'id="ann-machine-result" data-scorer="component:exact" data-criterion="has_answer"' in html
    assert "Reward component exact" in html and f'value="rubric:{rubric.pk}"' in html
    response = client.post(
        f"/annotation/{scored_task.pk}/score/", {"scorer": f"rubric:{rubric.pk}"}, follow=True
    )
    job = ScoringJob.objects.get()
    assert (job.label, job.status, job.scorer["skipped_judge_criteria"]) == (
        "Rubric helpfulness",
        "queued",
        ["clarity"],
    )
    assert f'data-job="{job.pk}" data-status="queued"' in response.content.decode()
    assert "judge criteria not scored: clarity" in response.content.decode()
    bad = client.post(f"/annotation/{scored_task.pk}/score/", {"scorer": "rubric:abc"}, follow=True)
    assert "Pick a verifier version or a rubric" in bad.content.decode() and ScoringJob.objects.count() == 1
