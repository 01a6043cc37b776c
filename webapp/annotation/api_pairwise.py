"""The pairwise half of the annotation API: the task list's ``kind: pairwise`` creation, judgements,
adjudication, agreement, disagreements, exports and the TRL preference export.

api.py's views call these when the task (or the request) is pairwise, so one URL serves both kinds.
"""

from __future__ import annotations

from django.http import StreamingHttpResponse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema
from rest_framework import status
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from webapp.annotation.exports import jsonl_lines
from webapp.annotation.models import AnnotationItem, AnnotationTask, Assignment
from webapp.annotation.pairs_file import file_format, staged_upload
from webapp.annotation.selectors import task_get_for_manager, tasks_for_project
from webapp.annotation.selectors_pairwise import (
    pairwise_export_csv_rows,
    pairwise_export_records,
    preference_pairs,
    preference_summary,
)
from webapp.annotation.serializers import (
    AssignmentOut,
    JudgementIn,
    PairwiseAdjudicateIn,
    PairwiseAdjudicationOut,
    PairwiseTaskIn,
    TaskOut,
)
from webapp.annotation.services_pairwise import (
    judgement_save_draft,
    judgement_submit,
    pairwise_adjudication_set,
    pairwise_task_create_from_eval,
    pairwise_task_create_from_file,
    pairwise_task_create_from_run,
)
from webapp.benchmarks.selectors import eval_run_get_for_user
from webapp.core.csv_export import csv_lines
from webapp.core.errors import InvalidInput
from webapp.datafiles.models import Dataset
from webapp.experiments.selectors import run_get_for_user
from webapp.teams.models import Project

SOURCES = ("run", "eval_run", "file", "dataset")


def create_pairwise_task(request: Request, project: Project) -> Response:
    """POST /api/projects/<id>/annotation-tasks/ with ``kind: pairwise`` and one source."""
    data = PairwiseTaskIn(data=request.data)
    data.is_valid(raise_exception=True)
    fields = dict(data.validated_data)
    given = [s for s in SOURCES if fields.get(s) is not None]
    if len(given) != 1:
        message = "Give one source: run, eval_run, file (a pairs file) or dataset."
        raise InvalidInput(message, {"run": [message]})
    common = {k: fields[k] for k in ("name", "instructions", "annotators_per_item") if k in fields}
    common["annotators"] = fields.get("annotators") or None
    pairing = dict(fields.get("pairing") or {})
    source = given[0]
    if source == "run":
        run = run_get_for_user(run_id=fields["run"], user=request.user)
        if run.experiment.project_id != project.pk:
            raise InvalidInput(
                "run: that run belongs to another project.", {"run": ["Pick a run of this project."]}
            )
        task = pairwise_task_create_from_run(run=run, actor=request.user, pairing=pairing, **common)
    elif source == "eval_run":
        eval_run = eval_run_get_for_user(eval_run_id=fields["eval_run"], user=request.user)
        if eval_run.benchmark.project_id != project.pk:
            message = "Pick an evaluation of this project."
            raise InvalidInput(
                "eval_run: that evaluation belongs to another project.", {"eval_run": [message]}
            )
        task = pairwise_task_create_from_eval(
            eval_run=eval_run, actor=request.user, pairing=pairing, **common
        )
    elif source == "file":
        upload = fields["file"]
        filename = (upload.name or "pairs.jsonl")[:200]
        fmt = file_format(filename)
        with staged_upload(upload, filename, upload.size or 0) as path:
            task = pairwise_task_create_from_file(
                project=project,
                actor=request.user,
                path=path,
                fmt=fmt,
                filename=filename,
                seed=fields["seed"],
                **common,
            )
    else:
        task = create_from_dataset(request, project, fields["dataset"], fields["seed"], common)
    task = tasks_for_project(project=project, user=request.user).get(pk=task.pk)
    return Response(TaskOut(task).data, status=status.HTTP_201_CREATED)


def create_from_dataset(
    request: Request, project: Project, dataset_id: int, seed: int, common: dict[str, object]
) -> AnnotationTask:
    from pathlib import Path

    dataset = Dataset.objects.filter(pk=dataset_id, project=project).first()
    if dataset is None:
        message = "No such dataset in this project."
        raise InvalidInput(message, {"dataset": [message]})
    return pairwise_task_create_from_file(
        project=project, actor=request.user, path=Path(dataset.path), fmt=dataset.format,
        filename=dataset.name, seed=seed, **common,  # type: ignore[arg-type]
    )  # fmt: skip


def save_judgement(request: Request, assignment: Assignment, *, submit: bool) -> Response:
    data = JudgementIn(data=request.data)
    data.is_valid(raise_exception=True)
    fields = data.validated_data
    work = judgement_submit if submit else judgement_save_draft
    saved = work(
        assignment=assignment, actor=request.user, choice=fields.get("choice"), reason=fields.get("reason")
    )
    return Response(AssignmentOut(saved).data)


def adjudicate(request: Request, item: AnnotationItem) -> Response:
    data = PairwiseAdjudicateIn(data=request.data)
    data.is_valid(raise_exception=True)
    saved = pairwise_adjudication_set(item=item, actor=request.user, **data.validated_data)
    if saved is None:
        return Response(status=status.HTTP_204_NO_CONTENT)
    return Response(PairwiseAdjudicationOut(saved).data)


def export(task: AnnotationTask, fmt: str) -> StreamingHttpResponse:
    """Every judgement (one record per assignment), JSONL or CSV (CSV-injection-safe)."""
    if fmt == "csv":
        header, rows = pairwise_export_csv_rows(task=task)
        return StreamingHttpResponse(csv_lines(header, rows), content_type="text/csv; charset=utf-8")
    return StreamingHttpResponse(
        jsonl_lines(pairwise_export_records(task=task)), content_type="application/jsonl"
    )


EXCLUDED_HEADERS = {
    "tie": "X-Excluded-Ties",
    "both_bad": "X-Excluded-Both-Bad",
    "unresolved": "X-Excluded-Unresolved",
}


class TaskPreferencesExportApi(APIView):
    @extend_schema(
        responses={(200, "application/jsonl"): OpenApiTypes.BINARY},
        summary="Preference pairs as TRL's RewardTrainer reads them: JSONL {prompt, chosen, rejected} from the "
        "final decisions left/right (owners/admins); X-Excluded-Ties, X-Excluded-Both-Bad and "
        "X-Excluded-Unresolved count what was left out",
    )
    def get(self, request: Request, task_id: int) -> StreamingHttpResponse:
        task = task_get_for_manager(task_id=task_id, user=request.user)
        if task.kind != "pairwise":
            raise InvalidInput(
                "This is a rubric task: it has no preferences to export.", {"task": ["Pick a pairwise task."]}
            )
        summary = preference_summary(task=task)
        response = StreamingHttpResponse(
            jsonl_lines(preference_pairs(task)), content_type="application/jsonl"
        )
        response["Content-Disposition"] = f'attachment; filename="preferences-task-{task.pk}.jsonl"'
        response["X-Pairs"] = str(summary["pairs"])
        for key, header in EXCLUDED_HEADERS.items():
            response[header] = str(summary[key])
        return response
