"""The rollout browser page, the JSON rows its table reads and the one rollout its token view draws (session
auth, members only, outsiders 404).

The page embeds its first rows with ``json_script`` (escaped for a <script> element), so model text is
never in the HTML as markup; rollouts.js and token_view.js insert it with ``textContent`` only.
"""

from __future__ import annotations

from typing import Any

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import render
from django.urls import reverse
from rest_framework import serializers

from webapp.experiments.selectors import rollout_detail, run_get_for_user
from webapp.experiments.serializers import RolloutFilterIn, rollout_detail_data
from webapp.pages.selectors_episodes import rollout_episode
from webapp.pages.selectors_rollouts import (
    rollout_finish_reasons,
    rollout_process,
    rollout_rows,
    rollout_steps,
    without_drawn_details,
)

# The range of the integer columns these filters meet: past it a query is a 400, not a database error.
MAX_INT = 2**31 - 1


class RowsQueryIn(RolloutFilterIn):
    """The REST rollout filters, plus what only the browser table needs."""

    group = serializers.IntegerField(required=False, min_value=0, max_value=MAX_INT)
    length_min = serializers.IntegerField(required=False, min_value=0, max_value=MAX_INT)
    length_max = serializers.IntegerField(required=False, min_value=0, max_value=MAX_INT)
    page = serializers.IntegerField(required=False, min_value=1, max_value=MAX_INT, default=1)
    page_size = serializers.IntegerField(required=False, min_value=1, max_value=MAX_INT, default=50)


PAGE_ONLY = ("group", "length_min", "length_max", "page", "page_size")


def _parsed_rows_query(params: dict[str, Any]) -> dict[str, Any]:
    query = RowsQueryIn(data={k: v for k, v in params.items() if v != ""})
    query.is_valid(raise_exception=True)
    return dict(query.validated_data)


@login_required
def rollout_browser(request: HttpRequest, run_id: int) -> HttpResponse:
    run = run_get_for_user(run_id=run_id, user=request.user)
    steps = rollout_steps(run=run)
    step = (
        int(request.GET["step"]) if request.GET.get("step", "").isdigit() else (steps[-1] if steps else None)
    )
    first_rows = rollout_rows(run=run, filters={"step": step}) if step is not None else None
    page_data = {
        "run_id": run.pk,
        "steps": steps,
        "step": step,
        "finish_reasons": rollout_finish_reasons(run=run),
        "rows_url": reverse("rollout-rows", args=[run.pk]),
        "tokens_base": reverse("rollout-browser", args=[run.pk]),  # + "<rollout id>/tokens/"
        "first_rows": first_rows,
        "open_rollout": int(request.GET["rollout"]) if request.GET.get("rollout", "").isdigit() else None,
    }
    return render(request, "pages/rollouts.html", {"run": run, "page_data": page_data})


@login_required
def rollout_browser_rows(request: HttpRequest, run_id: int) -> JsonResponse:
    run = run_get_for_user(run_id=run_id, user=request.user)
    try:
        query = _parsed_rows_query(request.GET.dict())
    except serializers.ValidationError as exc:
        return JsonResponse({"error": "invalid filter", "fields": exc.detail}, status=400)
    page_args = {k: query.pop(k) for k in PAGE_ONLY if k in query}
    return JsonResponse(rollout_rows(run=run, filters=query, **page_args))


@login_required
def rollout_browser_tokens(request: HttpRequest, run_id: int, rollout_id: int) -> JsonResponse:
    """One rollout as ``GET /api/runs/<id>/rollouts/<rid>/`` gives it, plus ``process``: its steps checked
    against its tokens (``rollout_process``: None without step data, ``{"error"}`` when unreadable), and
    ``episode``: a multi-turn rollout's turns, checked the same way (``rollout_episode``)."""
    run = run_get_for_user(run_id=run_id, user=request.user)
    detail = rollout_detail(run=run, rollout_id=rollout_id)
    data = without_drawn_details(rollout_detail_data(detail))
    token_count = len(detail.token_ids)
    data["process"] = rollout_process(details=detail.rollout.details, token_count=token_count)
    data["episode"] = rollout_episode(details=detail.rollout.details, token_count=token_count)
    return JsonResponse(data)
