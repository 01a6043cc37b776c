"""Adjudication: an owner or admin sets an item's final score per criterion (checked on its scale, one per
item and criterion, changeable, removable); everyone else is refused in the one error shape; exports
carry the final scores and mark the adjudicated items."""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Callable

import pytest
from django.contrib.auth.models import User
from rest_framework.test import APIClient

from webapp.annotation.models import Adjudication, AnnotationTask
from webapp.annotation.services import adjudication_set
from webapp.core.errors import InvalidInput

Api = Callable[[User | None], APIClient]


def url(task: AnnotationTask, position: int = 2) -> str:
    return f"/api/annotation-items/{task.items.get(position=position).pk}/adjudication/"


@pytest.mark.parametrize(
    ("role", "status"),
    [("owner", 200), ("admin", 200), ("annotator", 403), ("viewer", 403), ("outsider", 404)],
)
def test_only_owners_and_admins_adjudicate(
    role: str, status: int, scored_task: AnnotationTask, alice: User, charlie: User,
    join: Callable[[User, str | None], User], api: Api,
) -> None:  # fmt: skip
    if role != "owner":
        join(charlie, None if role == "outsider" else role)
    response = api(alice if role == "owner" else charlie).post(
        url(scored_task), {"criterion": "clarity", "score": 3, "note": "read it twice"}, format="json"
    )
    assert response.status_code == status, response.content
    body = response.json()
    if status == 200:
        who = "alice" if role == "owner" else "charlie"
        assert (body["criterion"], body["score"], body["note"], body["decided_by"]) == (
            "clarity",
            3.0,
            "read it twice",
            who,
        )
    else:
        assert set(body) == {"message", "extra"} and not Adjudication.objects.exists()
    if status == 403:
        assert "needs the admin role" in body["message"] and "Ask an owner or admin" in body["message"]


def test_an_annotator_of_the_item_cannot_adjudicate_it_either(
    scored_task: AnnotationTask, annotators: list[User], api: Api
) -> None:
    response = api(annotators[0]).post(url(scored_task), {"criterion": "clarity", "score": 1}, format="json")
    assert response.status_code == 403 and not Adjudication.objects.exists()


@pytest.mark.parametrize(
    ("criterion", "score", "field"),
    [("clarity", 7, "score"), ("clarity", 2.5, "score"), ("has_answer", 0.5, "score"), ("tone", 11, "score"),
     ("nope", 1, "criterion")],
)  # fmt: skip
def test_a_score_off_the_criterion_scale_or_an_unknown_criterion_is_a_400(
    criterion: str, score: float, field: str, scored_task: AnnotationTask, alice: User, api: Api
) -> None:
    response = api(alice).post(url(scored_task), {"criterion": criterion, "score": score}, format="json")
    assert response.status_code == 400
    assert field in response.json()["extra"]["fields"], response.json()


def test_a_long_note_is_refused(scored_task: AnnotationTask, alice: User, api: Api) -> None:
    response = api(alice).post(
        url(scored_task), {"criterion": "tone", "score": 5, "note": "x" * 2001}, format="json"
    )
    assert response.status_code == 400 and "note" in response.json()["extra"]["fields"]


def test_setting_again_changes_the_one_final_score_and_who_set_it(
    scored_task: AnnotationTask, alice: User, bob: User, join: Callable[[User, str | None], User]
) -> None:
    join(bob, "admin")
    item = scored_task.items.get(position=2)
    first = adjudication_set(item=item, actor=alice, criterion="tone", score=4)
    assert first is not None
    second = adjudication_set(item=item, actor=bob, criterion="tone", score=6, note="  the middle  ")
    assert second is not None and second.pk == first.pk
    row = Adjudication.objects.get(item=item, criterion="tone")
    assert (row.score, row.note, row.decided_by, Adjudication.objects.count()) == (6.0, "the middle", bob, 1)
    assert row.decided_at >= first.decided_at


def test_a_null_score_removes_the_final_score(scored_task: AnnotationTask, alice: User, api: Api) -> None:
    api(alice).post(url(scored_task), {"criterion": "clarity", "score": 3}, format="json")
    response = api(alice).post(url(scored_task), {"criterion": "clarity", "score": None}, format="json")
    assert response.status_code == 204 and not Adjudication.objects.exists()


def test_adjudicating_never_changes_the_annotators_scores(scored_task: AnnotationTask, alice: User) -> None:
    item = scored_task.items.get(position=2)
    before = list(item.assignments.values_list("annotator__username", "scores"))
    adjudication_set(item=item, actor=alice, criterion="clarity", score=3)
    assert list(item.assignments.values_list("annotator__username", "scores")) == before


def test_the_service_refuses_a_criterion_the_task_does_not_have(
    scored_task: AnnotationTask, alice: User
) -> None:
    with pytest.raises(InvalidInput) as err:
        adjudication_set(item=scored_task.items.first(), actor=alice, criterion="length", score=1)  # type: ignore[arg-type]
    assert "criterion" in err.value.fields


def test_exports_carry_the_final_scores_and_mark_adjudicated_items(
    scored_task: AnnotationTask, alice: User, api: Api
) -> None:
    item = scored_task.items.get(position=2)
    adjudication_set(item=item, actor=alice, criterion="clarity", score=3, note="=SUM(A1) is not a formula")
    lines = [
        json.loads(line)
        for line in api(alice)
        .get(f"/api/annotation-tasks/{scored_task.pk}/export.jsonl")
        .getvalue()
        .decode()
        .splitlines()
    ]
    mine = [r for r in lines if r["item_id"] == item.pk]
    others = [r for r in lines if r["item_id"] != item.pk]
    assert len(mine) == 2 and all(r["adjudicated"] and r["final_scores"] == {"clarity": 3.0} for r in mine)
    assert mine[0]["adjudications"]["clarity"]["by"] == "alice"
    assert mine[0]["adjudications"]["clarity"]["note"] == "=SUM(A1) is not a formula"
    assert all(not r["adjudicated"] and r["final_scores"] == {} for r in others)

    text = api(alice).get(f"/api/annotation-tasks/{scored_task.pk}/export.csv").getvalue().decode()
    rows = list(csv.DictReader(io.StringIO(text)))
    assert {"adjudicated", "final:clarity", "final:tone", "final_note:clarity"} <= set(rows[0])
    for row in rows:
        if row["item_id"] == str(item.pk):
            assert (row["adjudicated"], row["final:clarity"], row["final:tone"]) == ("true", "3.0", "")
            assert row["final_note:clarity"] == "'=SUM(A1) is not a formula"  # CSV-injection safe
        else:
            assert (row["adjudicated"], row["final:clarity"]) == ("false", "")


def test_the_review_api_shows_every_annotator_side_by_side_with_the_final_score(
    scored_task: AnnotationTask, alice: User, api: Api
) -> None:
    item = scored_task.items.get(position=2)
    adjudication_set(item=item, actor=alice, criterion="clarity", score=3)
    body = api(alice).get(f"/api/annotation-items/{item.pk}/review/").json()
    rows = {r["criterion"]: r for r in body["criteria"]}
    assert rows["clarity"]["scores"] == {"dana": 1.0, "erin": 5.0} and rows["clarity"]["range"] == 4.0
    assert rows["clarity"]["final"]["score"] == 3.0 and rows["tone"]["final"] is None
    assert body["comments"] == {
        "dana": "dana thinks <b>this</b> is unclear",
        "erin": "erin thinks <b>this</b> is unclear",
    }
    assert body["adjudicated"] is True
