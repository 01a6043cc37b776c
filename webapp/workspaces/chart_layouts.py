"""Each member's chart layout in a project: what the run and compare pages pin, which custom panels they
draw, against which x-axis, smoothed how much and on which scale.

One layout per member per project (``ChartLayout``), the requesting user's own: pinning a chart on one run
page shows it pinned on every run of the project and on the compare page. Any member may save their own
layout, a viewer too: it changes nothing anyone else sees. The spec is bounded (``ChartLayoutSpec``) so a
layout stays a few tens of kilobytes whatever a client sends.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    StringConstraints,
    ValidationError,
    model_validator,
)

from webapp.api.exception_handler import validation_message
from webapp.core.errors import InvalidInput
from webapp.teams.models import Project
from webapp.teams.permissions import READ, require_role
from webapp.teams.selectors import AnyUser
from webapp.workspaces.models import ChartLayout

MAX_PINNED = 50
MAX_PANELS = 20
MAX_PANEL_SERIES = 12
MAX_KEY_CHARS = 200  # MetricPoint.key's length
MAX_TITLE_CHARS = 100
X_AXES = ("step", "time", "tokens")  # time: perf/elapsed_s, tokens: perf/tokens_total (docs/charts.md)


def _printable(text: str) -> str:
    """No control characters or lone surrogates: PostgreSQL's jsonb cannot store NUL, and neither is a
    metric key or a title anyone typed."""
    if any(ord(c) < 32 or ord(c) == 127 or 0xD800 <= ord(c) <= 0xDFFF for c in text):
        raise ValueError("must not hold control characters")
    return text


def _distinct(items: list[str]) -> list[str]:
    repeated = sorted({item for item in items if items.count(item) > 1})
    if repeated:
        raise ValueError(f"lists {repeated[0]!r} more than once")
    return items


MetricKey = Annotated[
    str, StringConstraints(min_length=1, max_length=MAX_KEY_CHARS), AfterValidator(_printable)
]
Title = Annotated[
    str,
    StringConstraints(min_length=1, max_length=MAX_TITLE_CHARS, strip_whitespace=True),
    AfterValidator(_printable),
]
PanelId = Annotated[str, StringConstraints(pattern=r"^[A-Za-z0-9_-]{1,40}$")]


class ChartPanel(BaseModel):
    """A chart a member composed: several metric keys on one set of axes (on compare, each run's)."""

    model_config = ConfigDict(extra="forbid", strict=True)

    id: PanelId
    title: Title
    series: Annotated[
        list[MetricKey], Field(min_length=1, max_length=MAX_PANEL_SERIES), AfterValidator(_distinct)
    ]


class ChartLayoutSpec(BaseModel):
    """What a member arranged; every field has the default a new member sees."""

    model_config = ConfigDict(extra="forbid", strict=True, allow_inf_nan=False)

    pinned: Annotated[list[MetricKey], Field(max_length=MAX_PINNED), AfterValidator(_distinct)] = []
    panels: Annotated[list[ChartPanel], Field(max_length=MAX_PANELS)] = []
    x_axis: Literal["step", "time", "tokens"] = "step"
    smoothing: Annotated[float, Field(ge=0, le=0.99)] = 0.6  # the EMA weight of the previous value
    log: bool = False  # a log y-axis

    @model_validator(mode="after")
    def _panel_ids_differ(self) -> ChartLayoutSpec:
        ids = [panel.id for panel in self.panels]
        if len(set(ids)) != len(ids):
            raise ValueError("two panels have the same id")
        return self


def default_chart_layout() -> dict[str, Any]:
    return ChartLayoutSpec().model_dump(mode="json")


def parse_chart_layout(value: Any, *, field: str = "spec") -> dict[str, Any]:
    """The spec with its defaults filled in, as stored; InvalidInput naming ``spec.<path>`` otherwise."""
    if not isinstance(value, dict):
        message = (
            f'{field} must be an object such as {{"pinned": ["rollout/reward_mean"], "x_axis": "step"}}.'
        )
        raise InvalidInput(message, {field: [message]})
    try:
        spec = ChartLayoutSpec.model_validate(value)
    except ValidationError as err:
        fields: dict[str, list[str]] = {}
        for e in err.errors():
            path = ".".join([field, *(str(p) for p in e["loc"])])
            fields.setdefault(path, []).append(e["msg"].removeprefix("Value error, "))
        raise InvalidInput(f"Invalid chart layout: {validation_message(fields)}", fields) from None
    return spec.model_dump(mode="json")


def _member_id(project: Project, user: AnyUser) -> int:
    """The user's id once they are known to be a member (viewer or above); 404 for anyone else."""
    require_role(project=project, user=user, minimum=READ)
    assert user.pk is not None  # require_role refused an anonymous user
    return int(user.pk)


def chart_layout_for_member(*, project: Project, user: AnyUser) -> dict[str, Any]:
    """The member's own layout in ``project`` (the defaults when they never saved one); 404 for an outsider.

    A stored spec that no longer validates (written under older bounds) reads as the defaults rather
    than breaking the pages; the next save replaces it."""
    stored = (
        ChartLayout.objects.filter(project=project, user_id=_member_id(project, user))
        .values_list("spec", flat=True)
        .first()
    )
    if stored is None:
        return default_chart_layout()
    try:
        return parse_chart_layout(stored)
    except InvalidInput:
        return default_chart_layout()


def chart_layout_save(*, project: Project, user: AnyUser, spec: Any) -> dict[str, Any]:
    """Replace the member's own layout in ``project`` with ``spec`` (validated); returns it as stored."""
    member_id = _member_id(project, user)
    clean = parse_chart_layout(spec)
    ChartLayout.objects.update_or_create(project=project, user_id=member_id, defaults={"spec": clean})
    return clean
