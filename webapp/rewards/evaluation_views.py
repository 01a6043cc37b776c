"""Reward-source evaluation pages: a project's evaluations with the new-evaluation form, and one evaluation's result
(the sources side by side, the Best-of-N chart, live progress while it runs, CSV and JSON downloads).

The form posts here and calls evaluation_services (errors become messages); the result page's script
(static/js/reward_evaluation.js) polls the API while the job runs and draws the chart. Every member reads and
may start one (as the verifier audit); outsiders get 404.
"""

from __future__ import annotations

import json
from typing import Any

from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse

from trainer.bounds import UnsafeInput, strict_json_loads
from webapp.core.errors import ApplicationError, InvalidInput
from webapp.pages.views_common import report_error, role_context
from webapp.rewards.evaluation_exports import headline_n, process_summary, source_summary
from webapp.rewards.evaluation_selectors import (
    evaluation_get_for_user,
    evaluation_queue_position,
    evaluations_for_project,
    form_choices,
)
from webapp.rewards.evaluation_services import reward_evaluation_start
from webapp.rewards.models import JobStatus, RewardModelVersion, SourceKind
from webapp.teams.selectors import project_get_for_user

DEFAULT_FORM = {
    "name": "", "sources_json": '[{"name": "chain_arithmetic"}]', "pairwise_kind": "", "pairwise_id": "",
    "bon": "on", "bon_benchmark": "builtin:chain_arithmetic", "bon_policy": "tiny:chain", "bon_n": "16",
    "bon_problems": "100", "audit": "on", "audit_problems": "20", "agreement_task": "", "rubric_judge_model": "",
    "process": "", "process_oracle": "", "process_mc": "", "process_mc_k": "4", "process_prm_model": "",
    "process_problems": "", "process_samples": "", "process_aggregate": "min", "process_labels": "",
    "process_labels_format": "math_shepherd",
}  # fmt: skip


def _int(value: str, field: str) -> int:
    try:
        return int(value)
    except ValueError:
        raise InvalidInput(
            f"{field} must be a whole number.", {field: ["Expected a whole number."]}
        ) from None


def _request_data(post: Any) -> dict[str, Any]:
    """The API body the form stands for."""
    try:
        extra = strict_json_loads(post.get("sources_json") or "[]")
    except (json.JSONDecodeError, UnsafeInput) as err:
        raise InvalidInput(
            f"Other sources: not valid JSON ({err}).", {"sources": ["Not valid JSON."]}
        ) from None
    if not isinstance(extra, list):
        raise InvalidInput("Other sources must be a JSON list of entries.", {"sources": ["Expected a list."]})
    sources: list[dict[str, Any]] = [
        {"reward_model_version": _int(v, "sources")} for v in post.getlist("source_rm")
    ]
    sources += [{"verifier_version": _int(v, "sources")} for v in post.getlist("source_vv")]
    judge_model = (post.get("rubric_judge_model") or "").strip()
    sources += [
        {"rubric": _int(v, "sources"), **({"judge_model": judge_model} if judge_model else {})}
        for v in post.getlist("source_rubric")
    ]
    sources += _process_sources(post)
    data: dict[str, Any] = {"sources": sources + extra, "audit": post.get("audit") == "on"}
    if post.get("pairwise_kind") in ("dataset", "annotation_task", "run") and post.get("pairwise_id"):
        data["pairwise"] = {post["pairwise_kind"]: _int(post["pairwise_id"], "pairwise")}
    if post.get("bon") == "on":
        data["best_of_n"] = {"benchmark": post.get("bon_benchmark", ""), "policy": post.get("bon_policy", ""),
                             "n": _int(post.get("bon_n", "16"), "best_of_n.n"),
                             "problems": _int(post.get("bon_problems", "100"), "best_of_n.problems")}  # fmt: skip
    if data["audit"]:
        data["audit_problems"] = _int(post.get("audit_problems", "20"), "audit_problems")
    if post.get("agreement_task"):
        data["agreement"] = {"annotation_task": _int(post["agreement_task"], "agreement")}
    if post.get("process") == "on":
        data["process"] = _process_part(post)
    return data


def _process_sources(post: Any) -> list[dict[str, Any]]:
    """The step scorers ticked in the form (a PRM version is a ``source_rm`` like any reward model version)."""
    out: list[dict[str, Any]] = []
    if post.get("process_oracle") == "on":
        out.append({"process_scorer": {"name": "oracle_chain"}})
    if post.get("process_mc") == "on":
        k = _int(post.get("process_mc_k") or "4", "process_scorer.params.k")
        out.append({"process_scorer": {"name": "monte_carlo", "params": {"k": k}}})
    model = (post.get("process_prm_model") or "").strip()
    if model:
        out.append({"process_scorer": {"name": "prm", "params": {"model": model}}})
    return out


def _process_part(post: Any) -> dict[str, Any]:
    part: dict[str, Any] = {"aggregate": post.get("process_aggregate") or "min"}
    if post.get("process_problems"):
        part["problems"] = _int(post["process_problems"], "process.problems")
    if post.get("process_samples"):
        part["samples_per_problem"] = _int(post["process_samples"], "process.samples_per_problem")
    if post.get("process_labels"):
        part["labels"] = {"dataset": _int(post["process_labels"], "process.labels.dataset"),
                          "format": post.get("process_labels_format") or "math_shepherd"}  # fmt: skip
    return part


@login_required
def evaluation_list(request: HttpRequest, project_id: int) -> HttpResponse:
    project = project_get_for_user(project_id=project_id, user=request.user)
    form: dict[str, Any] = dict(DEFAULT_FORM)
    if request.method == "POST":
        form = {k: request.POST.get(k, "") for k in DEFAULT_FORM}
        try:
            job = reward_evaluation_start(
                project=project, actor=request.user, data=_request_data(request.POST), name=form["name"]
            )
        except (ApplicationError, PermissionDenied) as err:
            report_error(request, err)
        else:
            return redirect("rewards:evaluation-detail", job_id=job.pk)
    choices = form_choices(project=project)
    if request.method != "POST" and _preselects_a_prm(
        request.GET.getlist("source_rm"), choices["rm_versions"]
    ):
        form["process"] = "on"  # a PRM version's "Evaluate" link: the part that evaluates it, ticked
    context = {
        "project": project,
        "evaluations": evaluations_for_project(project=project),
        "form": form,
        # ?source_rm=<id> preselects a version (a reward model version page's "Evaluate" link).
        "chosen_rm": (request.POST if request.method == "POST" else request.GET).getlist("source_rm"),
        "chosen_vv": (request.POST if request.method == "POST" else request.GET).getlist("source_vv"),
        "chosen_rubrics": (request.POST if request.method == "POST" else request.GET).getlist(
            "source_rubric"
        ),
        **choices,
        **role_context(project=project, request=request),
    }
    return render(request, "rewards/evaluation_list.html", context)


def _preselects_a_prm(chosen: list[str], versions: list[RewardModelVersion]) -> bool:
    return any(str(v.pk) in chosen and v.kind == SourceKind.PRM for v in versions)


@login_required
def evaluation_detail(request: HttpRequest, job_id: int) -> HttpResponse:
    job = evaluation_get_for_user(job_id=job_id, user=request.user)
    result = job.result or {}
    context = {
        "project": job.project,
        "job": job,
        "summaries": [
            source_summary(result, row) for row in result.get("sources", []) if row.get("kind") != "process"
        ],
        "process_rows": [
            p for row in result.get("sources", []) if (p := process_summary(result, row)) is not None
        ],
        "headline_n": headline_n(result),
        "result": result,
        "queue_position": evaluation_queue_position(job=job),
        "active": job.status in (JobStatus.QUEUED, JobStatus.RUNNING),
        "config_json": json.dumps(job.config, indent=1, sort_keys=True),
        "page_data": {
            "job_id": job.pk,
            "status": job.status,
            "api": reverse("reward-evaluation-detail", kwargs={"job_id": job.pk}),
            "cancel": reverse("reward-evaluation-cancel", kwargs={"job_id": job.pk}),
        },
        **role_context(project=job.project, request=request),
    }
    return render(request, "rewards/evaluation_detail.html", context)
