"""Team annotation over HTTP. Views only parse, call a service or selector, and serialise."""

from __future__ import annotations

from django.http import StreamingHttpResponse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema
from rest_framework import status
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from webapp.annotation.exports import csv_lines, jsonl_lines
from webapp.annotation.selectors import (
    assignment_get_for_user,
    export_csv_rows,
    export_records,
    queue_for_user,
    task_agreement,
    task_get_for_manager,
    task_get_for_user,
    task_progress,
    tasks_for_project,
)
from webapp.annotation.serializers import (
    AssignmentOut,
    AssignmentWorkIn,
    CriterionAgreementOut,
    ProgressOut,
    QueueFilterIn,
    ReassignIn,
    TaskFromRunIn,
    TaskOut,
)
from webapp.annotation.services import (
    assignment_save_draft,
    assignment_skip,
    assignment_submit,
    task_create_from_eval,
    task_create_from_run,
    task_reassign_unfinished,
)
from webapp.api.query import parsed_query
from webapp.benchmarks.selectors import eval_run_get_for_user
from webapp.core.errors import InvalidInput
from webapp.experiments.selectors import run_get_for_user
from webapp.rubrics.models import Rubric
from webapp.teams.selectors import project_get_for_user


class ProjectTaskListApi(APIView):
    @extend_schema(responses=TaskOut(many=True), summary="Annotation tasks (annotators: the ones assigned to you)")
    def get(self, request: Request, project_id: int) -> Response:
        project = project_get_for_user(project_id=project_id, user=request.user)
        return Response(TaskOut(tasks_for_project(project=project, user=request.user), many=True).data)

    @extend_schema(request=TaskFromRunIn, responses={201: TaskOut},
                   summary="Create a task from a run's rollouts or an evaluation's benchmark samples")
    def post(self, request: Request, project_id: int) -> Response:
        project = project_get_for_user(project_id=project_id, user=request.user)
        data = TaskFromRunIn(data=request.data)
        data.is_valid(raise_exception=True)
        fields = dict(data.validated_data)
        run_id, eval_run_id = fields.pop("run", None), fields.pop("eval_run", None)
        if (run_id is None) == (eval_run_id is None):
            message = "Give either run (its rollouts) or eval_run (its benchmark samples), not both or neither."
            raise InvalidInput(message, {"run": [message]})
        rubric = Rubric.objects.filter(pk=fields.pop("rubric"), project=project).first()
        if rubric is None:
            raise InvalidInput("rubric: no such rubric in this project.", {"rubric": ["Pick a rubric of this project."]})
        if eval_run_id is not None:
            eval_run = eval_run_get_for_user(eval_run_id=eval_run_id, user=request.user)
            if eval_run.benchmark.project_id != project.pk:
                message = "Pick an evaluation of this project."
                raise InvalidInput("eval_run: that evaluation belongs to another project.", {"eval_run": [message]})
            task = task_create_from_eval(eval_run=eval_run, rubric=rubric, actor=request.user, **fields)
        else:
            run = run_get_for_user(run_id=run_id, user=request.user)
            if run.experiment.project_id != project.pk:
                raise InvalidInput("run: that run belongs to another project.", {"run": ["Pick a run of this project."]})
            task = task_create_from_run(run=run, rubric=rubric, actor=request.user, **fields)
        task = tasks_for_project(project=project, user=request.user).get(pk=task.pk)
        return Response(TaskOut(task).data, status=status.HTTP_201_CREATED)


class TaskDetailApi(APIView):
    @extend_schema(responses=TaskOut)
    def get(self, request: Request, task_id: int) -> Response:
        task = task_get_for_user(task_id=task_id, user=request.user)
        return Response(TaskOut(tasks_for_project(project=task.project, user=request.user).get(pk=task.pk)).data)


class TaskQueueApi(APIView):
    @extend_schema(parameters=[QueueFilterIn], responses=AssignmentOut(many=True), summary="Your items in a task")
    def get(self, request: Request, task_id: int) -> Response:
        task = task_get_for_user(task_id=task_id, user=request.user)
        queue = queue_for_user(task=task, user=request.user, status=parsed_query(QueueFilterIn, request).get("status"))
        return Response(AssignmentOut(queue, many=True).data)


class TaskProgressApi(APIView):
    @extend_schema(responses=ProgressOut(many=True), summary="Progress per annotator (owners/admins)")
    def get(self, request: Request, task_id: int) -> Response:
        task = task_get_for_manager(task_id=task_id, user=request.user)
        return Response(ProgressOut(task_progress(task=task), many=True).data)


class TaskReassignApi(APIView):
    @extend_schema(request=ReassignIn, responses=OpenApiTypes.OBJECT,
                   summary="Move one annotator's unfinished work to another (owners/admins)")
    def post(self, request: Request, task_id: int) -> Response:
        task = task_get_for_manager(task_id=task_id, user=request.user)
        data = ReassignIn(data=request.data)
        data.is_valid(raise_exception=True)
        fields = data.validated_data
        result = task_reassign_unfinished(
            task=task, actor=request.user, from_username=fields["from_annotator"], to_username=fields["to_annotator"]
        )
        return Response(result)


class TaskAgreementApi(APIView):
    @extend_schema(
        responses=CriterionAgreementOut(many=True),
        summary="Krippendorff's alpha per criterion, and judge/rule vs people (owners/admins)",
    )
    def get(self, request: Request, task_id: int) -> Response:
        task = task_get_for_manager(task_id=task_id, user=request.user)
        return Response(CriterionAgreementOut(task_agreement(task=task), many=True).data)


class TaskExportApi(APIView):
    @extend_schema(responses={(200, "application/octet-stream"): OpenApiTypes.BINARY}, summary="JSONL or CSV export")
    def get(self, request: Request, task_id: int, fmt: str) -> StreamingHttpResponse:
        task = task_get_for_manager(task_id=task_id, user=request.user)
        if fmt == "csv":
            header, rows = export_csv_rows(task=task)
            response = StreamingHttpResponse(csv_lines(header, rows), content_type="text/csv; charset=utf-8")
        else:
            response = StreamingHttpResponse(jsonl_lines(export_records(task=task)), content_type="application/jsonl")
        response["Content-Disposition"] = f'attachment; filename="annotation-task-{task.pk}.{fmt}"'
        return response


class AssignmentDetailApi(APIView):
    @extend_schema(responses=AssignmentOut)
    def get(self, request: Request, assignment_id: int) -> Response:
        return Response(AssignmentOut(assignment_get_for_user(assignment_id=assignment_id, user=request.user)).data)

    @extend_schema(request=AssignmentWorkIn, responses=AssignmentOut, summary="Save a draft (autosave)")
    def patch(self, request: Request, assignment_id: int) -> Response:
        assignment = assignment_get_for_user(assignment_id=assignment_id, user=request.user)
        data = AssignmentWorkIn(data=request.data)
        data.is_valid(raise_exception=True)
        saved = assignment_save_draft(assignment=assignment, actor=request.user, **data.validated_data)
        return Response(AssignmentOut(saved).data)


class AssignmentSubmitApi(APIView):
    @extend_schema(request=AssignmentWorkIn, responses=AssignmentOut, summary="Submit scores for every criterion")
    def post(self, request: Request, assignment_id: int) -> Response:
        assignment = assignment_get_for_user(assignment_id=assignment_id, user=request.user)
        data = AssignmentWorkIn(data=request.data)
        data.is_valid(raise_exception=True)
        saved = assignment_submit(assignment=assignment, actor=request.user, **data.validated_data)
        return Response(AssignmentOut(saved).data)


class AssignmentSkipApi(APIView):
    @extend_schema(request=None, responses=AssignmentOut, summary="Skip the item")
    def post(self, request: Request, assignment_id: int) -> Response:
        assignment = assignment_get_for_user(assignment_id=assignment_id, user=request.user)
        return Response(AssignmentOut(assignment_skip(assignment=assignment, actor=request.user)).data)
