"""Benchmark pages: ``/projects/<id>/benchmarks/`` (list, results table, exports, new benchmark),
``/benchmarks/<id>/`` (config, Evaluate form, evaluations with live progress, Pass@k and over-training
plots) and ``/evals/<id>/`` (one evaluation: metrics, problems, samples in the token view).

Model text reaches pages only through ``json_script`` and ``textContent`` (static/js/benchmarks*.js).
"""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.db import transaction
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_POST

from webapp.benchmarks import selectors, selectors_tables, services
from webapp.benchmarks.config_validation import builtin_suite_names
from webapp.benchmarks.forms import BenchmarkForm
from webapp.benchmarks.models import EVAL_FINISHED, Benchmark, BenchmarkSource, EvalStatus
from webapp.benchmarks.verifier_versions import verifier_version_choices
from webapp.core.errors import ApplicationError, InvalidInput
from webapp.pages.views_common import report_error, role_context
from webapp.teams.models import Project
from webapp.teams.selectors import project_get_for_user


def _verifier_names() -> list[str]:
    from trainer.verifiers import VERIFIERS

    return list(VERIFIERS.names())


@login_required
def benchmark_list(request: HttpRequest, project_id: int) -> HttpResponse:
    project = project_get_for_user(project_id=project_id, user=request.user)
    form = BenchmarkForm(request.POST or None, request.FILES or None)
    if request.method == "POST" and form.is_valid():
        try:
            benchmark = _create_from_form(request, project, form)
        except (ApplicationError, PermissionDenied) as err:
            report_error(request, err)
            if isinstance(err, InvalidInput) and "bad_rows" in err.fields:
                form.add_error(None, "Bad rows: " + "; ".join(err.fields["bad_rows"][:50]))
        else:
            return redirect("benchmarks:detail", benchmark_id=benchmark.pk)
    runs = selectors.eval_runs_for_project(project=project)
    context = {
        "project": project,
        "benchmarks": selectors.benchmarks_for_project(project=project),
        "form": form,
        "builtins": builtin_suite_names(),
        "verifiers": _verifier_names(),
        "verifier_versions": verifier_version_choices(project=project),
        "page_data": {
            "project_id": project.pk,
            "table": selectors_tables.results_table(eval_runs=runs),
            "export_url": f"/api/projects/{project.pk}/benchmark-results/",
        },
        **role_context(project=project, request=request),
    }
    return render(request, "benchmarks/benchmark_list.html", context)


def _create_from_form(request: HttpRequest, project: Project, form: BenchmarkForm) -> Benchmark:
    d = form.cleaned_data
    with transaction.atomic():
        dataset = None
        if d["source"] == BenchmarkSource.FILE:
            upload = d.get("file")
            if upload is None:
                raise InvalidInput("Choose a data file to upload.", {"file": ["Choose a file."]})
            dataset = services.benchmark_file_upload(
                project=project, actor=request.user, file=upload, filename=upload.name or "data",
                size=upload.size or 0, name=f"benchmark {d['name']}", problem_field=d.get("problem_field") or "problem",
                answer_field=d.get("answer_field") or "answer",
            )  # fmt: skip
        try:
            config = form.config()
        except Exception as err:  # a ValidationError from the list / JSON fields
            message = "; ".join(getattr(err, "messages", [str(err)]))
            raise InvalidInput(message, {"config": [message]}) from None
        return services.benchmark_create(
            project=project, actor=request.user, name=d["name"], description=d.get("description") or "",
            source=d["source"], config=config, dataset=dataset, builtin=d.get("builtin") or "",
            verifier_version_id=d.get("verifier_version"),
        )  # fmt: skip


@login_required
def benchmark_detail(request: HttpRequest, benchmark_id: int) -> HttpResponse:
    benchmark = selectors.benchmark_get_for_user(benchmark_id=benchmark_id, user=request.user)
    project = benchmark.project
    runs = list(selectors.eval_runs_for_benchmark(benchmark=benchmark).select_related("benchmark"))
    page_data = {
        "benchmark_id": benchmark.pk,
        "project_id": project.pk,
        "evals": [
            selectors.eval_status_payload(eval_run=r) | {"step": r.step, "kind": r.target_kind} for r in runs
        ],
        "table": selectors_tables.results_table(eval_runs=runs),
        "curves": selectors_tables.pass_at_k_curves(eval_runs=runs),
        "over_steps": selectors_tables.metrics_over_steps(benchmark=benchmark, eval_runs=runs),
        "targets": selectors.eval_target_choices(project=project),
        "launch_url": f"/api/benchmarks/{benchmark.pk}/evals/",
        "export_url": f"/api/projects/{project.pk}/benchmark-results/?benchmark={benchmark.pk}",
        "active": [r.pk for r in runs if r.status in (EvalStatus.QUEUED, EvalStatus.RUNNING)],
    }
    context = {
        "project": project,
        "benchmark": benchmark,
        "page_data": page_data,
        **role_context(project=project, request=request),
    }
    return render(request, "benchmarks/benchmark_detail.html", context)


@login_required
def eval_detail(request: HttpRequest, eval_run_id: int) -> HttpResponse:
    row = selectors.eval_run_get_for_user(eval_run_id=eval_run_id, user=request.user)
    from webapp.benchmarks.results import problem_row

    page_data = {
        "eval": selectors.eval_status_payload(eval_run=row),
        "problems": [problem_row(p) for p in selectors.problems_for_eval(eval_run=row)],
        "samples_url": "/api/eval-problems/",
    }
    context = {
        "project": row.benchmark.project,
        "benchmark": row.benchmark,
        "eval_run": row,
        "page_data": page_data,
        "queue_position": selectors.eval_queue_position(eval_run=row),
        "cancellable": row.status not in EVAL_FINISHED and not row.cancel_requested,
        **role_context(project=row.benchmark.project, request=request),
    }
    return render(request, "benchmarks/eval_detail.html", context)


@login_required
@require_POST
def eval_cancel(request: HttpRequest, eval_run_id: int) -> HttpResponse:
    row = selectors.eval_run_get_for_user(eval_run_id=eval_run_id, user=request.user)
    try:
        services.eval_cancel(eval_run=row, actor=request.user)
    except (ApplicationError, PermissionDenied) as err:
        report_error(request, err)
    return redirect("benchmarks:eval", eval_run_id=row.pk)
