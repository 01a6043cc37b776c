"""Saved views of the runs table: the bounded spec (columns, sort, filters, status, grouping), and who may
save, change and delete them.

A spec names its columns by id, the same ids the page writes into its address so a link can be shared:

- a run's own facts: ``run``, ``experiment``, ``status``, ``source``, ``steps``, ``created``, ``created_by``;
- ``config:<dotted path>``, e.g. ``config:training.learning_rate``;
- ``metric:<key>:<stat>`` with stat ``last``, ``best``, ``smoothed`` (the best trailing mean) or
  ``smoothed_last`` (the trailing mean at the last point), optionally ``:max`` or ``:min`` to override the
  key's direction (webapp/experiments/metric_summaries.py), e.g. ``metric:actor/kl:best:min``.

Anyone in the project may read the views; a member with at least ``SAVE_RUN_VIEWS`` may save one; only
its creator or an admin may change or delete it (it is shared, so one member cannot rewrite another's).
"""

from __future__ import annotations

import re
from typing import Annotated, Any, Literal

from django.core.exceptions import PermissionDenied
from django.db import IntegrityError, transaction
from django.db.models import QuerySet
from django.http import Http404
from pydantic import AfterValidator, BaseModel, ConfigDict, Field, StringConstraints, ValidationError

from webapp.core.errors import Conflict, InvalidInput
from webapp.experiments.metric_summaries import MAX_KEY_LENGTH, MAX_SUMMARY_KEYS
from webapp.experiments.models import RunStatus
from webapp.teams.models import Project, Role
from webapp.teams.permissions import MANAGE_MEMBERS, READ, require_role, role_at_least
from webapp.teams.selectors import AnyUser, membership_role
from webapp.workspaces.models import RunTableView

# Saving a view changes nothing a run trained with, but every member sees it: any member who does work
# in the project (annotator and up) may save one; a viewer only reads.
SAVE_RUN_VIEWS = Role.ANNOTATOR
CHANGE_OTHERS_VIEWS = MANAGE_MEMBERS  # admins tidy up views their creators left

MAX_VIEWS_PER_PROJECT = 200
MAX_NAME = 100  # RunTableView.name's max_length
MAX_COLUMNS = 60
MAX_CONFIG_PATH = 300
MAX_FILTER_TEXT = 100
FIELD_COLUMNS = ("run", "experiment", "status", "source", "steps", "created", "created_by")
METRIC_STATS = ("last", "best", "smoothed", "smoothed_last")
DIRECTIONS = ("max", "min")
CONTROL = re.compile(r"[\x00-\x1f\x7f]")


def parse_column(column: str) -> dict[str, str]:
    """A column id as ``{"kind": "field" | "config" | "metric", ...}``; ValueError saying what is wrong.

    >>> parse_column("metric:actor/kl:best:min")
    {'kind': 'metric', 'key': 'actor/kl', 'stat': 'best', 'direction': 'min'}
    """
    if CONTROL.search(column):
        raise ValueError("a column id has no control characters")
    if column in FIELD_COLUMNS:
        return {"kind": "field", "name": column}
    if column.startswith("config:"):
        path = column.removeprefix("config:")
        if not path or len(path) > MAX_CONFIG_PATH:
            raise ValueError(f"config:<path> needs a dotted path of 1 to {MAX_CONFIG_PATH} characters")
        return {"kind": "config", "path": path}
    if column.startswith("metric:"):
        parts = column.removeprefix("metric:").rsplit(":", 2)
        direction = ""
        if len(parts) == 3 and parts[2] in DIRECTIONS and parts[1] in METRIC_STATS:
            key, stat, direction = parts
        elif len(parts) >= 2 and parts[-1] in METRIC_STATS:
            key, stat = ":".join(parts[:-1]), parts[-1]
        else:
            raise ValueError(f"metric:<key>:<stat> needs a stat among {', '.join(METRIC_STATS)} "
                             "(and optionally :max or :min)")  # fmt: skip
        if not key or len(key) > MAX_KEY_LENGTH:
            raise ValueError(f"a metric key has 1 to {MAX_KEY_LENGTH} characters")
        return {"kind": "metric", "key": key, "stat": stat, **({"direction": direction} if direction else {})}
    raise ValueError(
        f"not a column: use one of {', '.join(FIELD_COLUMNS)}, config:<path> or metric:<key>:<stat>"
    )


def _column(value: str) -> str:
    parse_column(value)
    return value


ColumnId = Annotated[
    str, StringConstraints(min_length=1, max_length=MAX_CONFIG_PATH + 20), AfterValidator(_column)
]
FilterText = Annotated[str, StringConstraints(max_length=MAX_FILTER_TEXT)]
StatusName = Literal["queued", "not_queued", "running", "succeeded", "failed", "cancelled"]


class RunTableSpec(BaseModel):
    """What a saved view restores. Filters are the page's filter-row texts: ``>0.5``, ``<=1e-5``,
    ``0.1..0.3`` or ``=3`` for numbers, a substring for text (the page applies them)."""

    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)

    columns: list[ColumnId] = Field(min_length=1, max_length=MAX_COLUMNS)
    sort: ColumnId | None = None
    descending: bool = True
    filters: dict[ColumnId, FilterText] = Field(default_factory=dict, max_length=MAX_COLUMNS)
    status: list[StatusName] = Field(default_factory=list, max_length=len(RunStatus))
    group_by: ColumnId | None = None


def _consistency_errors(spec: RunTableSpec, field: str) -> dict[str, list[str]]:
    errors: dict[str, list[str]] = {}
    if len(set(spec.columns)) != len(spec.columns):
        errors[f"{field}.columns"] = ["a column is listed twice"]
    keys = {parse_column(c)["key"] for c in spec.columns if c.startswith("metric:")}
    if len(keys) > MAX_SUMMARY_KEYS:
        errors[f"{field}.columns"] = [f"at most {MAX_SUMMARY_KEYS} metric keys ({len(keys)} given)"]
    if spec.sort is not None and spec.sort not in spec.columns:
        errors[f"{field}.sort"] = [f"{spec.sort!r} is not one of the view's columns"]
    for column in spec.filters:
        if column not in spec.columns:
            errors[f"{field}.filters.{column}"] = ["filters apply to the view's columns only"]
    if spec.group_by is not None and spec.group_by.startswith("metric:"):
        errors[f"{field}.group_by"] = [
            "group by a config field or a run's field (experiment, status, ...), not a metric"
        ]
    if len(set(spec.status)) != len(spec.status):
        errors[f"{field}.status"] = ["a status is listed twice"]
    return errors


def _summary(what: str, fields: dict[str, list[str]]) -> str:
    path, messages = next(iter(fields.items()))
    more = len(fields) - 1
    return f"Invalid {what}: {path}: {messages[0]}" + (f" (and {more} more)" if more else "")


def parse_run_table_spec(value: Any, *, field: str = "spec") -> dict[str, Any]:
    """The spec as stored (defaults filled in), or InvalidInput keyed ``spec.<path>``."""
    if not isinstance(value, dict):
        message = (
            'spec must be an object such as {"columns": ["run", "metric:rollout/reward_mean:smoothed"]}.'
        )
        raise InvalidInput(message, {field: [message]})
    try:
        spec = RunTableSpec.model_validate(value)
    except ValidationError as err:
        fields: dict[str, list[str]] = {}
        for e in err.errors():
            path = ".".join([field, *(str(p) for p in e["loc"])])
            fields.setdefault(path, []).append(e["msg"].removeprefix("Value error, "))
        raise InvalidInput(_summary("view", fields), fields) from None
    errors = _consistency_errors(spec, field)
    if errors:
        raise InvalidInput(_summary("view", errors), errors)
    return spec.model_dump()


def _clean_name(name: Any) -> str:
    text = name.strip() if isinstance(name, str) else ""
    problem = (
        "a view needs a name" if not text
        else f"at most {MAX_NAME} characters" if len(text) > MAX_NAME
        else "no control characters (tabs, newlines)" if CONTROL.search(text)
        else ""
    )  # fmt: skip
    if problem:
        raise InvalidInput(f"Invalid view name: {problem}.", {"name": [problem]})
    return text


# --- reads -------------------------------------------------------------------------------------------


def run_views_for_project(*, project: Project) -> QuerySet[RunTableView]:
    return RunTableView.objects.filter(project=project).select_related("created_by").order_by("name", "id")


def run_view_get_for_user(*, view_id: int, user: AnyUser) -> RunTableView:
    view = RunTableView.objects.select_related("project", "created_by").filter(pk=view_id).first()
    if view is None:
        raise Http404("No such view.")
    require_role(project=view.project, user=user, minimum=READ)
    return view


def run_view_can_change(*, view: RunTableView, user: AnyUser, role: str | None) -> bool:
    """Whether ``user`` (whose role in the view's project is ``role``) may overwrite or delete it."""
    if role is None or not role_at_least(role, SAVE_RUN_VIEWS):
        return False
    return view.created_by_id == user.pk or role_at_least(role, CHANGE_OTHERS_VIEWS)


# --- writes ------------------------------------------------------------------------------------------


def run_view_create(*, project: Project, actor: AnyUser, name: Any, spec: Any) -> RunTableView:
    require_role(project=project, user=actor, minimum=SAVE_RUN_VIEWS)
    clean_name, clean_spec = _clean_name(name), parse_run_table_spec(spec)
    existing = RunTableView.objects.filter(project=project, name=clean_name).first()
    if existing is not None:
        raise Conflict(
            f"A view named {clean_name!r} already exists: overwrite it (PUT /api/run-views/{existing.pk}/) "
            "or choose another name.",
            {"fields": {"name": ["already used in this project"]}, "view_id": existing.pk},
        )
    if RunTableView.objects.filter(project=project).count() >= MAX_VIEWS_PER_PROJECT:
        message = (
            f"A project keeps at most {MAX_VIEWS_PER_PROJECT} saved views: delete one you no longer use."
        )
        raise InvalidInput(message, {"name": [message]})
    try:
        with transaction.atomic():
            return RunTableView.objects.create(
                project=project, name=clean_name, spec=clean_spec,
                created_by=actor if actor.is_authenticated else None,
            )  # fmt: skip
    except IntegrityError:  # saved by someone else between the check and the insert
        raise Conflict(f"A view named {clean_name!r} was just saved by someone else: choose another name.",
                       {"fields": {"name": ["already used in this project"]}}) from None  # fmt: skip


def _require_change(*, view: RunTableView, actor: AnyUser) -> None:
    role = require_role(project=view.project, user=actor, minimum=SAVE_RUN_VIEWS)
    if not run_view_can_change(view=view, user=actor, role=role):
        raise PermissionDenied("Only the view's creator or an admin of the project may change or delete it; "
                               "save your arrangement under a new name instead.")  # fmt: skip


def run_view_update(
    *, view: RunTableView, actor: AnyUser, name: Any = None, spec: Any = None
) -> RunTableView:
    """Rename and/or overwrite the spec (either may be left out)."""
    _require_change(view=view, actor=actor)
    fields = ["updated_at"]
    if name is not None:
        clean_name = _clean_name(name)
        if RunTableView.objects.filter(project=view.project, name=clean_name).exclude(pk=view.pk).exists():
            raise Conflict(f"Another view is already named {clean_name!r}: choose another name.",
                           {"fields": {"name": ["already used in this project"]}})  # fmt: skip
        view.name = clean_name
        fields.append("name")
    if spec is not None:
        view.spec = parse_run_table_spec(spec)
        fields.append("spec")
    view.save(update_fields=fields)
    return view


def run_view_delete(*, view: RunTableView, actor: AnyUser) -> None:
    _require_change(view=view, actor=actor)
    view.delete()


def role_of(*, project: Project, user: AnyUser) -> str | None:
    """The user's role in ``project`` (None outside it), for ``run_view_can_change``."""
    return membership_role(project=project, user=user)
