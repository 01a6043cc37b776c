"""Where annotators disagree: spreads on hand-computed values, the ranking overall and per criterion, the
counts, hiding resolved items, and who may read the ranking."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from django.contrib.auth.models import User
from rest_framework.test import APIClient

from webapp.annotation.disagreement import item_spreads, ranked, spread_of
from webapp.annotation.models import AnnotationTask
from webapp.annotation.selectors_review import disagreement_view
from webapp.annotation.services import adjudication_set
from webapp.core.errors import InvalidInput

CRITERIA = [
    {"name": "ok", "min_value": 0.0, "max_value": 1.0},
    {"name": "clarity", "min_value": 1.0, "max_value": 5.0},
]


def test_a_spread_is_the_range_and_population_sd_of_the_scores_and_the_range_as_a_share_of_the_scale() -> (
    None
):
    spread = spread_of([1.0, 3.0, 5.0], width=4.0)
    assert spread is not None
    assert (spread.scores, spread.low, spread.high, spread.range, spread.share) == (3, 1.0, 5.0, 4.0, 1.0)
    assert spread.std == pytest.approx((8 / 3) ** 0.5)  # deviations -2, 0, 2: mean square 8/3
    assert spread.std_share == pytest.approx((8 / 3) ** 0.5 / 4)


def test_one_score_has_no_spread() -> None:
    assert spread_of([4.0], width=4.0) is None


def test_items_rank_by_the_mean_range_share_overall_and_by_the_range_on_one_criterion() -> None:
    ratings = {
        "ok": {10: {1: 1.0, 2: 0.0}, 11: {1: 1.0, 2: 1.0}, 12: {1: 0.0, 2: 0.0}, 13: {1: 1.0}},
        "clarity": {10: {1: 3.0, 2: 3.0}, 11: {1: 1.0, 2: 5.0}, 12: {1: 2.0, 2: 4.0}, 13: {1: 2.0}},
    }
    spreads = item_spreads(ratings, criteria=CRITERIA, positions={10: 0, 11: 1, 12: 2, 13: 3})
    assert [s.item_id for s in spreads] == [10, 11, 12]  # item 13 has one score per criterion
    # overall: item 10 (1 + 0) / 2 = 0.5, item 11 (0 + 1) / 2 = 0.5, item 12 (0 + 0.5) / 2 = 0.25; 10 and 11
    # also tie on the sd share ((0.5 + 0) / 2 against (0 + 0.5) / 2), so item order decides
    assert [(s.item_id, s.overall) for s in ranked(spreads)] == [(10, 0.5), (11, 0.5), (12, 0.25)]
    assert [s.item_id for s in ranked(spreads, criterion="clarity")] == [11, 12, 10]
    assert [s.item_id for s in ranked(spreads, criterion="ok")] == [10, 11, 12]
    assert spreads[0].disputed == ["ok"] and spreads[1].disputed == ["clarity"]


def test_the_most_disputed_item_comes_first_with_counts(scored_task: AnnotationTask) -> None:
    view = disagreement_view(task=scored_task)
    assert [r["position"] for r in view["rows"]] == [2, 1, 3, 0, 4]
    assert view["counts"] == {
        "items": 6,
        "scored_by_two_or_more": 5,
        "disputed": 3,
        "resolved": 0,
        "open": 3,
        "shown": 5,
    }
    top = view["rows"][0]
    assert top["spread"] == pytest.approx(
        2 / 3
    )  # (0 + 1 + 1) / 3: has_answer agrees, clarity and tone span their scales
    assert top["state"] == "open" and top["disputed"] == ["clarity", "tone"] and top["annotators"] == 2
    assert [r["state"] for r in view["rows"]] == ["open", "open", "open", "agreed", "agreed"]


def test_ranking_by_one_criterion_uses_its_own_scale(scored_task: AnnotationTask) -> None:
    view = disagreement_view(task=scored_task, criterion="clarity")
    assert [(r["position"], r["spread"]) for r in view["rows"][:2]] == [(2, 4.0), (3, 1.0)]
    assert view["rows"][0]["std"] == 2.0  # scores 1 and 5
    assert view["counts"]["disputed"] == 2


def test_a_final_score_on_every_disputed_criterion_resolves_an_item_and_can_be_hidden(
    scored_task: AnnotationTask, alice: User
) -> None:
    item = scored_task.items.get(position=2)
    adjudication_set(item=item, actor=alice, criterion="clarity", score=3)
    rows = {r["position"]: r for r in disagreement_view(task=scored_task)["rows"]}
    assert rows[2]["state"] == "partly"  # tone is still open
    adjudication_set(item=item, actor=alice, criterion="tone", score=5, note="halfway")
    view = disagreement_view(task=scored_task)
    assert view["rows"][0]["state"] == "resolved" and view["rows"][0]["adjudicated"] == {
        "clarity": 3.0,
        "tone": 5.0,
    }
    assert (view["counts"]["resolved"], view["counts"]["open"]) == (1, 2)
    hidden = disagreement_view(task=scored_task, hide_resolved=True)
    assert [r["position"] for r in hidden["rows"]] == [1, 3, 0, 4] and hidden["counts"]["shown"] == 4
    by_clarity = disagreement_view(task=scored_task, criterion="clarity", hide_resolved=True)
    assert 2 not in [r["position"] for r in by_clarity["rows"]]


def test_an_unknown_criterion_or_page_is_refused_with_the_field(scored_task: AnnotationTask) -> None:
    with pytest.raises(InvalidInput) as err:
        disagreement_view(task=scored_task, criterion="nope")
    assert "criterion" in err.value.fields
    with pytest.raises(InvalidInput) as err:
        disagreement_view(task=scored_task, page=2)
    assert "page" in err.value.fields


@pytest.mark.parametrize(
    ("role", "status"),
    [("owner", 200), ("admin", 200), ("annotator", 403), ("viewer", 403), ("outsider", 404)],
)
def test_the_disagreement_api_is_for_owners_and_admins(
    role: str, status: int, scored_task: AnnotationTask, alice: User, charlie: User,
    join: Callable[[User, str | None], User], api: Callable[[User | None], APIClient],
) -> None:  # fmt: skip
    if role != "owner":
        join(charlie, None if role == "outsider" else role)
    client = api(alice if role == "owner" else charlie)
    response = client.get(f"/api/annotation-tasks/{scored_task.pk}/disagreements/?criterion=clarity")
    assert response.status_code == status
    if status == 200:
        assert response.json()["rows"][0]["position"] == 2
    elif status == 403:
        assert set(response.json()) == {"message", "extra"} and "admin role" in response.json()["message"]


def test_a_bad_query_is_a_400_naming_the_parameter(
    scored_task: AnnotationTask, alice: User, api: Callable[[User | None], APIClient]
) -> None:
    response = api(alice).get(f"/api/annotation-tasks/{scored_task.pk}/disagreements/?criterion=nope")
    assert response.status_code == 400 and "criterion" in response.json()["extra"]["fields"]
    response = api(alice).get(f"/api/annotation-tasks/{scored_task.pk}/disagreements/?page=0")
    assert response.status_code == 400 and "page" in response.json()["extra"]["fields"]
