"""``GET/PUT /api/projects/<id>/chart-layout/``: each member reads and saves only their own layout (a viewer
too), an outsider gets 404, and a spec out of bounds is a 400 in the API's one error shape naming the field."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from django.contrib.auth.models import User
from rest_framework.test import APIClient

from webapp.teams.models import Project
from webapp.workspaces.chart_layouts import MAX_PANEL_SERIES, MAX_PANELS, MAX_PINNED, default_chart_layout
from webapp.workspaces.models import ChartLayout

Api = Callable[[User | None], APIClient]
Join = Callable[[User, str | None], User]

PANEL = {"id": "p1", "title": "Reward and KL", "series": ["rollout/reward_mean", "actor/kl"]}
SPEC = {"pinned": ["rollout/reward_mean", "actor/kl", "perf/step_s"], "panels": [PANEL], "x_axis": "time",
        "smoothing": 0.8, "log": True}  # fmt: skip


def url(project: Project) -> str:
    return f"/api/projects/{project.pk}/chart-layout/"


def test_a_member_who_never_saved_gets_the_defaults(api: Api, alice: User, project: Project) -> None:
    response = api(alice).get(url(project))
    assert response.status_code == 200
    assert response.json() == {
        "spec": {"pinned": [], "panels": [], "x_axis": "step", "smoothing": 0.6, "log": False}
    }


def test_a_saved_layout_comes_back_as_stored(api: Api, alice: User, project: Project) -> None:
    saved = api(alice).put(url(project), {"spec": SPEC}, format="json")
    assert saved.status_code == 200
    assert saved.json() == {"spec": SPEC}
    assert api(alice).get(url(project)).json() == {"spec": SPEC}
    assert ChartLayout.objects.get(project=project, user=alice).spec == SPEC


def test_missing_fields_get_their_defaults(api: Api, alice: User, project: Project) -> None:
    response = api(alice).put(url(project), {"spec": {"pinned": ["actor/kl"]}}, format="json")
    assert response.json()["spec"] == {**default_chart_layout(), "pinned": ["actor/kl"]}


def test_each_member_has_their_own_layout_and_a_viewer_may_save_theirs(
    api: Api, alice: User, bob: User, join: Join, project: Project
) -> None:
    join(bob, "viewer")
    assert api(alice).put(url(project), {"spec": SPEC}, format="json").status_code == 200
    assert api(bob).get(url(project)).json()["spec"]["pinned"] == []  # not alice's

    mine = api(bob).put(url(project), {"spec": {"pinned": ["actor/entropy"]}}, format="json")

    assert mine.status_code == 200
    assert api(bob).get(url(project)).json()["spec"]["pinned"] == ["actor/entropy"]
    assert api(alice).get(url(project)).json()["spec"] == SPEC  # bob's save left alice's alone
    assert ChartLayout.objects.filter(project=project).count() == 2


def test_saving_again_replaces_the_layout_instead_of_adding_one(
    api: Api, alice: User, project: Project
) -> None:
    api(alice).put(url(project), {"spec": SPEC}, format="json")
    api(alice).put(url(project), {"spec": {"pinned": []}}, format="json")
    assert ChartLayout.objects.filter(project=project, user=alice).count() == 1
    assert api(alice).get(url(project)).json()["spec"]["panels"] == []


@pytest.mark.parametrize("method", ["get", "put"])
def test_an_outsider_gets_404(api: Api, bob: User, project: Project, method: str) -> None:
    response = getattr(api(bob), method)(url(project), {"spec": SPEC}, format="json")
    assert response.status_code == 404
    assert set(response.json()) == {"message", "extra"}
    assert not ChartLayout.objects.exists()


def test_an_anonymous_client_is_refused(api: Api, project: Project) -> None:
    assert api(None).get(url(project)).status_code in (401, 403)


def test_a_project_that_does_not_exist_is_404(api: Api, alice: User) -> None:
    assert api(alice).get("/api/projects/999999/chart-layout/").status_code == 404


@pytest.mark.parametrize(
    ("spec", "field", "words"),
    [
        ({"pinned": [f"k/{i}" for i in range(MAX_PINNED + 1)]}, "spec.pinned", f"at most {MAX_PINNED} items"),
        ({"pinned": ["k" * 201]}, "spec.pinned.0", "at most 200 characters"),
        ({"pinned": [""]}, "spec.pinned.0", "at least 1 character"),
        ({"pinned": ["a/b", "a/b"]}, "spec.pinned", "lists 'a/b' more than once"),
        ({"pinned": ["a\tb"]}, "spec.pinned.0", "control characters"),
        ({"pinned": "rollout/reward_mean"}, "spec.pinned", "valid list"),
        (
            {"panels": [{**PANEL, "id": f"p{i}"} for i in range(MAX_PANELS + 1)]},
            "spec.panels",
            f"at most {MAX_PANELS}",
        ),
        (
            {"panels": [{**PANEL, "series": [f"k/{i}" for i in range(MAX_PANEL_SERIES + 1)]}]},
            "spec.panels.0.series",
            f"at most {MAX_PANEL_SERIES} items",
        ),
        ({"panels": [{**PANEL, "series": []}]}, "spec.panels.0.series", "at least 1 item"),
        ({"panels": [{**PANEL, "title": ""}]}, "spec.panels.0.title", "at least 1 character"),
        ({"panels": [{**PANEL, "title": "t" * 101}]}, "spec.panels.0.title", "at most 100 characters"),
        ({"panels": [{**PANEL, "id": "has space"}]}, "spec.panels.0.id", "should match pattern"),
        ({"panels": [PANEL, PANEL]}, "spec", "two panels have the same id"),
        ({"panels": [{**PANEL, "color": "red"}]}, "spec.panels.0.color", "Extra inputs are not permitted"),
        ({"x_axis": "epoch"}, "spec.x_axis", "'step', 'time' or 'tokens'"),
        ({"smoothing": 1.0}, "spec.smoothing", "less than or equal to 0.99"),
        ({"smoothing": -0.1}, "spec.smoothing", "greater than or equal to 0"),
        ({"smoothing": "0.5"}, "spec.smoothing", "valid number"),
        ({"log": "yes"}, "spec.log", "valid boolean"),
        ({"sort": "name"}, "spec.sort", "Extra inputs are not permitted"),
    ],
)
def test_a_spec_out_of_bounds_is_refused_naming_the_field(
    api: Api, alice: User, project: Project, spec: dict[str, Any], field: str, words: str
) -> None:
    response = api(alice).put(url(project), {"spec": spec}, format="json")
    assert response.status_code == 400
    body = response.json()
    assert set(body) == {"message", "extra"} and set(body["extra"]) == {"fields"}
    assert words in " ".join(body["extra"]["fields"][field]), body
    assert body["message"].startswith("Invalid chart layout: " + field)
    assert not ChartLayout.objects.exists()


@pytest.mark.parametrize(
    ("body", "field"),
    [({}, "spec"), ({"spec": ["a"]}, "spec"), ({"spec": "x"}, "spec"), (["spec"], "non_field_errors")],
)
def test_a_body_without_a_spec_object_is_refused_in_the_same_shape(
    api: Api, alice: User, project: Project, body: Any, field: str
) -> None:
    response = api(alice).put(url(project), body, format="json")
    assert response.status_code == 400
    assert set(response.json()) == {"message", "extra"}
    assert list(response.json()["extra"]["fields"]) == [field]


def test_a_stored_spec_that_no_longer_validates_reads_as_the_defaults(
    api: Api, alice: User, project: Project
) -> None:
    ChartLayout.objects.create(project=project, user=alice, spec={"pinned": "not a list"})
    assert api(alice).get(url(project)).json()["spec"] == default_chart_layout()
