"""Team annotation over HTTP. Views only parse, call a service or selector, and serialise."""

from __future__ import annotations

from django.http import QueryDict, StreamingHttpResponse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema
from rest_framework import status
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from webapp.annotation import api_pairwise
from webapp.annotation.exports import jsonl_lines
from webapp.annotation.machine_scorers import machine_agreement, machine_table
from webapp.annotation.scoring_jobs import scoring_job_start
from webapp.annotation.selectors import (
    assignment_get_for_user,
    export_csv_rows,
    export_records,
    item_get_for_manager,
    queue_for_user,
    scoring_job_get_for_manager,
    scoring_jobs_for_task,
    task_agreement,
    task_get_for_manager,
    task_get_for_user,
    task_progress,
    tasks_for_project,
)
from webapp.annotation.selectors_pairwise import (
    pairwise_disagreement_view,
    pairwise_item_review,
    pairwise_task_agreement,
)
from webapp.annotation.selectors_review import disagreement_view, item_review
from webapp.annotation.serializers import (
    AdjudicateIn,
    AdjudicationOut,
    AssignmentOut,
    AssignmentWorkIn,
    CriterionAgreementOut,
    DisagreementQueryIn,
    MachineAgreementOut,
    MachineAgreementQueryIn,
    MachineScorerOut,
    ProgressOut,
    QueueFilterIn,
    ReassignIn,
    ScoringJobIn,
    ScoringJobOut,
    TaskFromRunIn,
    TaskOut,
)
from webapp.annotation.services import (
    adjudication_set,
    assignment_save_draft,
    assignment_skip,
    assignment_submit,
    task_create_from_eval,
    task_create_from_run,
    task_reassign_unfinished,
)
from webapp.api.query import parsed_query
from webapp.benchmarks.selectors import eval_run_get_for_user
from webapp.core.csv_export import csv_lines
from webapp.core.errors import InvalidInput
from webapp.experiments.selectors import run_get_for_user
from webapp.rubrics.models import Rubric
from webapp.teams.selectors import project_get_for_user
from webapp.verification.models import VerifierVersion


class ProjectTaskListApi(APIView):
    @extend_schema(
        responses=TaskOut(many=True), summary="Annotation tasks (annotators: the ones assigned to you)"
    )
    def get(self, request: Request, project_id: int) -> Response:
        project = project_get_for_user(project_id=project_id, user=request.user)
        return Response(TaskOut(tasks_for_project(project=project, user=request.user), many=True).data)

    @extend_schema(
        request=TaskFromRunIn,
        responses={201: TaskOut},
        summary="Create a task from a run's rollouts or an evaluation's benchmark samples; with kind=pairwise "
        "(PairwiseTaskIn), a pairwise preference task from a run, an evaluation, a pairs file or a dataset",
    )
    def post(self, request: Request, project_id: int) -> Response:
        project = project_get_for_user(project_id=project_id, user=request.user)
        if isinstance(request.data, dict | QueryDict) and request.data.get("kind") == "pairwise":
            return api_pairwise.create_pairwise_task(request, project)
        data = TaskFromRunIn(data=request.data)
        data.is_valid(raise_exception=True)
        fields = dict(data.validated_data)
        run_id, eval_run_id = fields.pop("run", None), fields.pop("eval_run", None)
        if (run_id is None) == (eval_run_id is None):
            message = (
                "Give either run (its rollouts) or eval_run (its benchmark samples), not both or neither."
            )
            raise InvalidInput(message, {"run": [message]})
        rubric = Rubric.objects.filter(pk=fields.pop("rubric"), project=project).first()
        if rubric is None:
            raise InvalidInput(
                "rubric: no such rubric in this project.", {"rubric": ["Pick a rubric of this project."]}
            )
        if eval_run_id is not None:
            eval_run = eval_run_get_for_user(eval_run_id=eval_run_id, user=request.user)
            if eval_run.benchmark.project_id != project.pk:
                message = "Pick an evaluation of this project."
                raise InvalidInput(
                    "eval_run: that evaluation belongs to another project.", {"eval_run": [message]}
                )
            task = task_create_from_eval(eval_run=eval_run, rubric=rubric, actor=request.user, **fields)
        else:
            run = run_get_for_user(run_id=run_id, user=request.user)
            if run.experiment.project_id != project.pk:
                raise InvalidInput(
                    "run: that run belongs to another project.", {"run": ["Pick a run of this project."]}
                )
            task = task_create_from_run(run=run, rubric=rubric, actor=request.user, **fields)
        task = tasks_for_project(project=project, user=request.user).get(pk=task.pk)
        return Response(TaskOut(task).data, status=status.HTTP_201_CREATED)


class TaskDetailApi(APIView):
    @extend_schema(responses=TaskOut)
    def get(self, request: Request, task_id: int) -> Response:
        task = task_get_for_user(task_id=task_id, user=request.user)
        return Response(
            TaskOut(tasks_for_project(project=task.project, user=request.user).get(pk=task.pk)).data
        )


class TaskQueueApi(APIView):
    @extend_schema(
        parameters=[QueueFilterIn], responses=AssignmentOut(many=True), summary="Your items in a task"
    )
    def get(self, request: Request, task_id: int) -> Response:
        task = task_get_for_user(task_id=task_id, user=request.user)
        queue = queue_for_user(
            task=task, user=request.user, status=parsed_query(QueueFilterIn, request).get("status")
        )
        return Response(AssignmentOut(queue, many=True).data)


class TaskProgressApi(APIView):
    @extend_schema(responses=ProgressOut(many=True), summary="Progress per annotator (owners/admins)")
    def get(self, request: Request, task_id: int) -> Response:
        task = task_get_for_manager(task_id=task_id, user=request.user)
        return Response(ProgressOut(task_progress(task=task), many=True).data)


class TaskReassignApi(APIView):
    @extend_schema(
        request=ReassignIn,
        responses=OpenApiTypes.OBJECT,
        summary="Move one annotator's unfinished work to another (owners/admins)",
    )
    def post(self, request: Request, task_id: int) -> Response:
        task = task_get_for_manager(task_id=task_id, user=request.user)
        data = ReassignIn(data=request.data)
        data.is_valid(raise_exception=True)
        fields = data.validated_data
        result = task_reassign_unfinished(
            task=task,
            actor=request.user,
            from_username=fields["from_annotator"],
            to_username=fields["to_annotator"],
        )
        return Response(result)


class TaskAgreementApi(APIView):
    @extend_schema(
        responses=CriterionAgreementOut(many=True),
        summary="Krippendorff's alpha per criterion, and judge/rule vs people (owners/admins)",
    )
    def get(self, request: Request, task_id: int) -> Response:
        task = task_get_for_manager(task_id=task_id, user=request.user)
        if task.kind == "pairwise":  # share of agreeing pairs, Cohen's kappa, Krippendorff's alpha
            return Response(pairwise_task_agreement(task=task))
        return Response(CriterionAgreementOut(task_agreement(task=task), many=True).data)


class TaskExportApi(APIView):
    @extend_schema(
        responses={(200, "application/octet-stream"): OpenApiTypes.BINARY}, summary="JSONL or CSV export"
    )
    def get(self, request: Request, task_id: int, fmt: str) -> StreamingHttpResponse:
        task = task_get_for_manager(task_id=task_id, user=request.user)
        if task.kind == "pairwise":
            response = api_pairwise.export(task, fmt)
        elif fmt == "csv":
            header, rows = export_csv_rows(task=task)
            response = StreamingHttpResponse(csv_lines(header, rows), content_type="text/csv; charset=utf-8")
        else:
            response = StreamingHttpResponse(
                jsonl_lines(export_records(task=task)), content_type="application/jsonl"
            )
        response["Content-Disposition"] = f'attachment; filename="annotation-task-{task.pk}.{fmt}"'
        return response


class AssignmentDetailApi(APIView):
    @extend_schema(responses=AssignmentOut)
    def get(self, request: Request, assignment_id: int) -> Response:
        return Response(
            AssignmentOut(assignment_get_for_user(assignment_id=assignment_id, user=request.user)).data
        )

    @extend_schema(
        request=AssignmentWorkIn,
        responses=AssignmentOut,
        summary="Save a draft (autosave); a pairwise item takes JudgementIn {choice, reason}",
    )
    def patch(self, request: Request, assignment_id: int) -> Response:
        assignment = assignment_get_for_user(assignment_id=assignment_id, user=request.user)
        if assignment.item.task.kind == "pairwise":  # {choice, reason}
            return api_pairwise.save_judgement(request, assignment, submit=False)
        data = AssignmentWorkIn(data=request.data)
        data.is_valid(raise_exception=True)
        saved = assignment_save_draft(assignment=assignment, actor=request.user, **data.validated_data)
        return Response(AssignmentOut(saved).data)


class AssignmentSubmitApi(APIView):
    @extend_schema(
        request=AssignmentWorkIn,
        responses=AssignmentOut,
        summary="Submit scores for every criterion; a pairwise item takes JudgementIn {choice, reason}",
    )
    def post(self, request: Request, assignment_id: int) -> Response:
        assignment = assignment_get_for_user(assignment_id=assignment_id, user=request.user)
        if assignment.item.task.kind == "pairwise":  # {choice, reason}
            return api_pairwise.save_judgement(request, assignment, submit=True)
        data = AssignmentWorkIn(data=request.data)
        data.is_valid(raise_exception=True)
        saved = assignment_submit(assignment=assignment, actor=request.user, **data.validated_data)
        return Response(AssignmentOut(saved).data)


class AssignmentSkipApi(APIView):
    @extend_schema(request=None, responses=AssignmentOut, summary="Skip the item")
    def post(self, request: Request, assignment_id: int) -> Response:
        assignment = assignment_get_for_user(assignment_id=assignment_id, user=request.user)
        return Response(AssignmentOut(assignment_skip(assignment=assignment, actor=request.user)).data)


class TaskDisagreementsApi(APIView):
    @extend_schema(
        parameters=[DisagreementQueryIn],
        responses=OpenApiTypes.OBJECT,
        summary="Items ranked by how much annotators disagree (owners/admins)",
    )
    def get(self, request: Request, task_id: int) -> Response:
        task = task_get_for_manager(task_id=task_id, user=request.user)
        query = parsed_query(DisagreementQueryIn, request)
        if task.kind == "pairwise":
            return Response(
                pairwise_disagreement_view(
                    task=task, hide_resolved=query["hide_resolved"], page=query["page"]
                )
            )
        return Response(disagreement_view(task=task, criterion=query.get("criterion") or None,
                                          hide_resolved=query["hide_resolved"], page=query["page"]))  # fmt: skip


class ItemReviewApi(APIView):
    @extend_schema(
        responses=OpenApiTypes.OBJECT,
        summary="One item: every annotator's scores, machine scores, final scores (owners/admins)",
    )
    def get(self, request: Request, item_id: int) -> Response:
        item = item_get_for_manager(item_id=item_id, user=request.user)
        if item.task.kind == "pairwise":  # the two completions, every choice and reason, the final decision
            return Response(pairwise_item_review(item=item))
        review = item_review(task=item.task, item=item)
        rows = [
            {"criterion": r["criterion"]["name"], "scores": dict(zip(review["annotators"], r["scores"], strict=True)),
             "mean": r["mean"], "range": r["range"], "std": r["std"], "training_score": r["training_score"],
             "final": AdjudicationOut(r["adjudication"]).data if r["adjudication"] else None}
            for r in review["rows"]
        ]  # fmt: skip
        return Response({
            "item": item.pk, "position": item.position, "prompt": item.prompt, "completion": item.completion,
            "reference_answer": item.reference_answer, "criteria": rows, "comments": dict(review["comments"]),
            "not_submitted": dict(review["not_submitted"]), "machine": review["machine"],
            "adjudicated": review["adjudicated"],
        })  # fmt: skip


class ItemAdjudicationApi(APIView):
    @extend_schema(
        request=AdjudicateIn,
        responses={200: AdjudicationOut, 204: None},
        summary="Set (or, with score null, remove) an item's final score on a criterion (owners/admins); a "
        "pairwise item takes PairwiseAdjudicateIn {choice, note}",
    )
    def post(self, request: Request, item_id: int) -> Response:
        item = item_get_for_manager(item_id=item_id, user=request.user)
        if item.task.kind == "pairwise":  # {choice, note}
            return api_pairwise.adjudicate(request, item)
        data = AdjudicateIn(data=request.data)
        data.is_valid(raise_exception=True)
        saved = adjudication_set(item=item, actor=request.user, **data.validated_data)
        if saved is None:
            return Response(status=status.HTTP_204_NO_CONTENT)
        return Response(AdjudicationOut(saved).data)


class TaskMachineScorersApi(APIView):
    @extend_schema(
        responses=MachineScorerOut(many=True),
        summary="The machine scorers with scores for the task's items (owners/admins)",
    )
    def get(self, request: Request, task_id: int) -> Response:
        task = task_get_for_manager(task_id=task_id, user=request.user)
        scorers, _ = machine_table(task=task)
        return Response(MachineScorerOut([s.as_dict() for s in scorers], many=True).data)


class TaskMachineAgreementApi(APIView):
    @extend_schema(
        parameters=[MachineAgreementQueryIn],
        responses=MachineAgreementOut,
        summary="One machine scorer against the people: alpha, Spearman, Pearson, n (owners/admins)",
    )
    def get(self, request: Request, task_id: int) -> Response:
        task = task_get_for_manager(task_id=task_id, user=request.user)
        query = parsed_query(MachineAgreementQueryIn, request)
        return Response(MachineAgreementOut(machine_agreement(task=task, **query)).data)


class TaskScoringJobsApi(APIView):
    @extend_schema(
        responses=ScoringJobOut(many=True), summary="The task's scoring jobs, newest first (owners/admins)"
    )
    def get(self, request: Request, task_id: int) -> Response:
        task = task_get_for_manager(task_id=task_id, user=request.user)
        return Response(ScoringJobOut(scoring_jobs_for_task(task=task, limit=50), many=True).data)

    @extend_schema(
        request=ScoringJobIn,
        responses={202: ScoringJobOut},
        summary="Score the task's items with a verifier version or a rubric's rule criteria, on a worker",
    )
    def post(self, request: Request, task_id: int) -> Response:
        task = task_get_for_manager(task_id=task_id, user=request.user)
        data = ScoringJobIn(data=request.data)
        data.is_valid(raise_exception=True)
        fields = data.validated_data
        version = rubric = None
        if fields.get("verifier_version") is not None:
            version = (
                VerifierVersion.objects.select_related("definition")
                .filter(pk=fields["verifier_version"], definition__project=task.project)
                .first()
            )
            if version is None:
                message = "No such verifier version in this project."
                raise InvalidInput(message, {"verifier_version": [message]})
        if fields.get("rubric") is not None:
            rubric = Rubric.objects.filter(pk=fields["rubric"], project=task.project).first()
            if rubric is None:
                raise InvalidInput(
                    "No such rubric in this project.", {"rubric": ["Pick a rubric of this project."]}
                )
        job = scoring_job_start(task=task, actor=request.user, verifier_version=version, rubric=rubric)
        return Response(ScoringJobOut(job).data, status=status.HTTP_202_ACCEPTED)


class ScoringJobDetailApi(APIView):
    @extend_schema(responses=ScoringJobOut, summary="One scoring job (the task page polls it)")
    def get(self, request: Request, job_id: int) -> Response:
        return Response(ScoringJobOut(scoring_job_get_for_manager(job_id=job_id, user=request.user)).data)
