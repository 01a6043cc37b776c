"""Saved runs-table views: anyone in the project reads them, an annotator or above saves one, only its
creator or an admin overwrites or deletes it, an outsider gets 404, and a bad spec or name is a 400 in the
API's one error shape naming the field."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, get_args

import pytest
from django.contrib.auth.models import User
from rest_framework.test import APIClient

from webapp.experiments.models import RunStatus
from webapp.teams.models import Project
from webapp.workspaces import run_views
from webapp.workspaces.models import RunTableView
from webapp.workspaces.run_views import MAX_COLUMNS, StatusName, parse_column

Api = Callable[[User | None], APIClient]
Join = Callable[[User, str | None], User]

SPEC: dict[str, Any] = {
    "columns": ["run", "status", "config:training.learning_rate", "metric:rollout/reward_mean:smoothed",
                "metric:actor/kl:best:min"],
    "sort": "metric:rollout/reward_mean:smoothed", "descending": True,
    "filters": {"config:training.learning_rate": "<=1e-4"}, "status": ["succeeded", "running"],
    "group_by": "config:training.learning_rate",
}  # fmt: skip


def views_url(project: Project) -> str:
    return f"/api/projects/{project.pk}/run-views/"


def view_url(view_id: int) -> str:
    return f"/api/run-views/{view_id}/"


def save(client: APIClient, project: Project, name: str = "lr sweep", spec: Any = None) -> Any:
    return client.post(
        views_url(project), {"name": name, "spec": SPEC if spec is None else spec}, format="json"
    )


def test_an_annotator_saves_a_view_and_a_viewer_loads_it(
    api: Api, bob: User, charlie: User, join: Join, project: Project
) -> None:
    join(bob, "annotator")
    join(charlie, "viewer")
    saved = save(api(bob), project)
    assert saved.status_code == 201, saved.json()
    body = saved.json()
    assert (body["name"], body["created_by"], body["can_change"]) == ("lr sweep", "bob", True)
    assert body["spec"] == SPEC

    listed = api(charlie).get(views_url(project)).json()
    assert [(v["name"], v["spec"], v["can_change"]) for v in listed] == [("lr sweep", SPEC, False)]
    one = api(charlie).get(view_url(body["id"]))
    assert one.status_code == 200 and one.json()["spec"] == SPEC


def test_a_viewer_cannot_save_a_view(api: Api, bob: User, join: Join, project: Project) -> None:
    join(bob, "viewer")
    response = save(api(bob), project)
    assert response.status_code == 403
    assert set(response.json()) == {"message", "extra"}
    assert not RunTableView.objects.exists()


def test_an_outsider_gets_404_for_the_list_a_view_and_a_save(
    api: Api, alice: User, bob: User, join: Join, project: Project
) -> None:
    view_id = save(api(alice), project).json()["id"]
    join(bob, None)
    assert api(bob).get(views_url(project)).status_code == 404
    assert api(bob).get(view_url(view_id)).status_code == 404
    assert save(api(bob), project, "mine").status_code == 404
    assert api(bob).delete(view_url(view_id)).status_code == 404
    assert RunTableView.objects.count() == 1


def test_defaults_are_filled_in_when_a_spec_gives_only_columns(
    api: Api, alice: User, project: Project
) -> None:
    body = save(api(alice), project, spec={"columns": ["run"]}).json()
    assert body["spec"] == {"columns": ["run"], "sort": None, "descending": True, "filters": {}, "status": [],
                            "group_by": None}  # fmt: skip


BAD_SPECS: list[tuple[str, Any, str]] = [
    ("not an object", ["run"], "spec"),
    ("no columns", {"columns": []}, "spec.columns"),
    ("an unknown column", {"columns": ["run", "colour"]}, "spec.columns.1"),
    ("a metric without a stat", {"columns": ["metric:rollout/reward_mean"]}, "spec.columns.0"),
    ("a metric with an unknown stat", {"columns": ["metric:rollout/reward_mean:median"]}, "spec.columns.0"),
    ("an empty config path", {"columns": ["config:"]}, "spec.columns.0"),
    ("too many columns", {"columns": [f"config:p{i}" for i in range(MAX_COLUMNS + 1)]}, "spec.columns"),
    ("a column twice", {"columns": ["run", "run"]}, "spec.columns"),
    ("sorting by a column not shown", {"columns": ["run"], "sort": "status"}, "spec.sort"),
    (
        "a filter on a column not shown",
        {"columns": ["run"], "filters": {"status": "fail"}},
        "spec.filters.status",
    ),
    ("a filter too long", {"columns": ["run"], "filters": {"run": "x" * 101}}, "spec.filters.run"),
    ("an unknown status", {"columns": ["run"], "status": ["exploded"]}, "spec.status.0"),
    ("grouping by a metric", {"columns": ["metric:a:last"], "group_by": "metric:a:last"}, "spec.group_by"),
    ("an unknown key", {"columns": ["run"], "colour": "red"}, "spec.colour"),
    ("a string for a boolean", {"columns": ["run"], "descending": "yes"}, "spec.descending"),
    ("too many metric keys", {"columns": [f"metric:k{i}:last" for i in range(41)]}, "spec.columns"),
]


@pytest.mark.parametrize(("why", "spec", "field"), BAD_SPECS, ids=[b[0] for b in BAD_SPECS])
def test_a_bad_spec_is_a_400_naming_the_field(
    api: Api, alice: User, project: Project, why: str, spec: Any, field: str
) -> None:
    response = save(api(alice), project, spec=spec)
    assert response.status_code == 400, why
    body = response.json()
    assert set(body) == {"message", "extra"}
    assert field in body["extra"]["fields"], body
    assert not RunTableView.objects.exists()


@pytest.mark.parametrize(
    ("name", "problem"), [("  ", "needs a name"), ("x" * 101, "at most 100"), ("a\nb", "control")]
)
def test_a_bad_name_is_a_400_naming_name(
    api: Api, alice: User, project: Project, name: str, problem: str
) -> None:
    response = save(api(alice), project, name=name)
    assert response.status_code == 400
    assert problem in response.json()["extra"]["fields"]["name"][0]


def test_a_name_already_used_is_a_conflict_naming_the_view_to_overwrite(
    api: Api, alice: User, project: Project
) -> None:
    first = save(api(alice), project).json()
    again = save(api(alice), project, name=" lr sweep ")
    assert again.status_code == 409
    assert again.json()["extra"]["view_id"] == first["id"]
    assert f"/api/run-views/{first['id']}/" in again.json()["message"]


def test_only_the_creator_or_an_admin_may_overwrite_or_delete_a_view(
    api: Api, alice: User, bob: User, charlie: User, join: Join, project: Project
) -> None:
    join(bob, "annotator")
    join(charlie, "annotator")
    view_id = save(api(bob), project).json()["id"]
    changed = {"name": "renamed", "spec": {"columns": ["run", "status"]}}

    assert api(charlie).put(view_url(view_id), changed, format="json").status_code == 403
    assert api(charlie).delete(view_url(view_id)).status_code == 403
    assert api(charlie).get(view_url(view_id)).json()["can_change"] is False

    overwritten = api(bob).put(view_url(view_id), changed, format="json")
    assert overwritten.status_code == 200
    assert (overwritten.json()["name"], overwritten.json()["spec"]["columns"]) == (
        "renamed",
        ["run", "status"],
    )
    renamed = api(alice).patch(
        view_url(view_id), {"name": "owner's name"}, format="json"
    )  # alice owns the project
    assert renamed.status_code == 200 and renamed.json()["spec"]["columns"] == ["run", "status"]
    assert api(alice).delete(view_url(view_id)).status_code == 204
    assert not RunTableView.objects.exists()


def test_a_creator_demoted_to_viewer_can_no_longer_change_their_view(
    api: Api, bob: User, join: Join, project: Project
) -> None:
    join(bob, "annotator")
    view_id = save(api(bob), project).json()["id"]
    join(bob, "viewer")
    assert api(bob).delete(view_url(view_id)).status_code == 403
    assert api(bob).get(view_url(view_id)).json()["can_change"] is False


def test_an_overwrite_with_a_bad_spec_keeps_the_saved_one(api: Api, alice: User, project: Project) -> None:
    view_id = save(api(alice), project).json()["id"]
    response = api(alice).put(
        view_url(view_id), {"name": "lr sweep", "spec": {"columns": ["nope"]}}, format="json"
    )
    assert response.status_code == 400 and "spec.columns.0" in response.json()["extra"]["fields"]
    assert RunTableView.objects.get(pk=view_id).spec == SPEC


def test_a_project_keeps_a_bounded_number_of_views(
    api: Api, alice: User, project: Project, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(run_views, "MAX_VIEWS_PER_PROJECT", 2)
    assert save(api(alice), project, "one").status_code == 201
    assert save(api(alice), project, "two").status_code == 201
    third = save(api(alice), project, "three")
    assert third.status_code == 400 and "at most 2" in third.json()["message"]


def test_the_spec_statuses_are_exactly_the_run_statuses() -> None:
    assert set(get_args(StatusName)) == set(RunStatus.values)


@pytest.mark.parametrize(
    ("column", "parsed"),
    [
        ("created_by", {"kind": "field", "name": "created_by"}),
        ("config:algorithm.loss_type.name", {"kind": "config", "path": "algorithm.loss_type.name"}),
        ("metric:rollout/reward_mean:smoothed", {"kind": "metric", "key": "rollout/reward_mean", "stat": "smoothed"}),
        ("metric:actor/kl:smoothed_last:min", {"kind": "metric", "key": "actor/kl", "stat": "smoothed_last", "direction": "min"}),
        ("metric:eval:gsm8k:acc:last", {"kind": "metric", "key": "eval:gsm8k:acc", "stat": "last"}),
    ],
)  # fmt: skip
def test_column_ids_parse_into_their_parts(column: str, parsed: dict[str, str]) -> None:
    assert parse_column(column) == parsed
