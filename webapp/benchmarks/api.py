"""Benchmarks and evaluations over HTTP. Thin: parse, call a selector or service, serialize."""

from __future__ import annotations

from django.http import HttpResponse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema
from rest_framework import status
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from webapp.api.parsers import StrictFormParser, StrictMultiPartParser
from webapp.benchmarks import exports, selectors, selectors_tables, services
from webapp.benchmarks.serializers import (
    BenchmarkFileIn,
    BenchmarkIn,
    BenchmarkOut,
    EvalLaunchIn,
    EvalRunDetailOut,
    EvalRunOut,
    ExportIn,
    ProblemFilterIn,
    ProblemRowOut,
    ProblemSamplesOut,
    validated,
)
from webapp.datafiles.api import DatasetOut
from webapp.datafiles.models import Dataset
from webapp.teams.selectors import project_get_for_user

EXPORT_TYPES = {"json": "application/json", "csv": "text/csv", "latex": "application/x-latex"}
EXPORT_SUFFIX = {"json": "json", "csv": "csv", "latex": "tex"}


class BenchmarkListApi(APIView):
    @extend_schema(responses=BenchmarkOut(many=True), summary="Benchmarks of a project")
    def get(self, request: Request, project_id: int) -> Response:
        project = project_get_for_user(project_id=project_id, user=request.user)
        return Response(BenchmarkOut(selectors.benchmarks_for_project(project=project), many=True).data)

    @extend_schema(request=BenchmarkIn, responses={201: BenchmarkOut}, summary="Create a benchmark")
    def post(self, request: Request, project_id: int) -> Response:
        project = project_get_for_user(project_id=project_id, user=request.user)
        data = validated(BenchmarkIn, request.data)
        dataset = None
        if data["dataset"] is not None:
            dataset = Dataset.objects.filter(project=project, pk=data["dataset"]).first()
        benchmark = services.benchmark_create(
            project=project, actor=request.user, name=data["name"], description=data["description"],
            source=data["source"], config=data["config"] or {}, dataset=dataset, builtin=data["builtin"],
            verifier_version_id=data["verifier_version"],
        )  # fmt: skip
        return Response(BenchmarkOut(benchmark).data, status=status.HTTP_201_CREATED)


class BenchmarkFileApi(APIView):
    parser_classes = (StrictMultiPartParser, StrictFormParser)

    @extend_schema(
        request=BenchmarkFileIn,
        responses={201: DatasetOut},
        summary="Upload a benchmark file (every row is checked; bad rows are listed by number)",
    )
    def post(self, request: Request, project_id: int) -> Response:
        project = project_get_for_user(project_id=project_id, user=request.user)
        data = validated(BenchmarkFileIn, request.data)
        upload = data["file"]
        dataset = services.benchmark_file_upload(
            project=project, actor=request.user, file=upload, filename=upload.name or "data",
            size=upload.size or 0, name=data["name"], problem_field=data["problem_field"],
            answer_field=data["answer_field"],
        )  # fmt: skip
        return Response(DatasetOut(dataset).data, status=status.HTTP_201_CREATED)


class BenchmarkDetailApi(APIView):
    @extend_schema(responses=BenchmarkOut, summary="A benchmark")
    def get(self, request: Request, benchmark_id: int) -> Response:
        return Response(
            BenchmarkOut(selectors.benchmark_get_for_user(benchmark_id=benchmark_id, user=request.user)).data
        )

    @extend_schema(responses={204: None}, summary="Delete a benchmark and its evaluations")
    def delete(self, request: Request, benchmark_id: int) -> Response:
        benchmark = selectors.benchmark_get_for_user(benchmark_id=benchmark_id, user=request.user)
        services.benchmark_delete(benchmark=benchmark, actor=request.user)
        return Response(status=status.HTTP_204_NO_CONTENT)


class BenchmarkEvalListApi(APIView):
    @extend_schema(responses=EvalRunOut(many=True), summary="Evaluations of a benchmark")
    def get(self, request: Request, benchmark_id: int) -> Response:
        benchmark = selectors.benchmark_get_for_user(benchmark_id=benchmark_id, user=request.user)
        return Response(EvalRunOut(selectors.eval_runs_for_benchmark(benchmark=benchmark), many=True).data)

    @extend_schema(
        request=EvalLaunchIn,
        responses={201: EvalRunOut(many=True)},
        summary="Evaluate base models and checkpoints on the benchmark (eval queue)",
    )
    def post(self, request: Request, benchmark_id: int) -> Response:
        benchmark = selectors.benchmark_get_for_user(benchmark_id=benchmark_id, user=request.user)
        data = validated(EvalLaunchIn, request.data)
        experiments, checkpoints = selectors.eval_targets(
            project=benchmark.project, experiment_ids=data["experiments"], checkpoint_ids=data["checkpoints"]
        )
        rows = services.eval_launch(
            benchmark=benchmark, actor=request.user, experiments=experiments, checkpoints=checkpoints
        )
        return Response(EvalRunOut(rows, many=True).data, status=status.HTTP_201_CREATED)


class EvalDetailApi(APIView):
    @extend_schema(
        responses=EvalRunDetailOut,
        summary="An evaluation: status, progress, queue position, metrics with CIs",
    )
    def get(self, request: Request, eval_run_id: int) -> Response:
        row = selectors.eval_run_get_for_user(eval_run_id=eval_run_id, user=request.user)
        return Response(EvalRunDetailOut(row).data)


class EvalCancelApi(APIView):
    @extend_schema(request=None, responses=EvalRunOut, summary="Cancel an evaluation")
    def post(self, request: Request, eval_run_id: int) -> Response:
        row = selectors.eval_run_get_for_user(eval_run_id=eval_run_id, user=request.user)
        return Response(EvalRunOut(services.eval_cancel(eval_run=row, actor=request.user)).data)


class EvalProblemListApi(APIView):
    @extend_schema(
        parameters=[ProblemFilterIn],
        responses=ProblemRowOut(many=True),
        summary="Per-problem results of an evaluation",
    )
    def get(self, request: Request, eval_run_id: int) -> Response:
        from webapp.benchmarks.results import problem_row

        row = selectors.eval_run_get_for_user(eval_run_id=eval_run_id, user=request.user)
        query = validated(ProblemFilterIn, request.query_params)
        problems = selectors.problems_for_eval(eval_run=row, correct=query["correct"])
        return Response([problem_row(p) for p in problems])


class EvalProblemSamplesApi(APIView):
    @extend_schema(
        responses=ProblemSamplesOut,
        summary="A problem's samples with their tokens and logprobs (the token view's shape)",
    )
    def get(self, request: Request, problem_id: int) -> Response:
        problem = selectors.problem_get_for_user(problem_id=problem_id, user=request.user)
        return Response({
            "problem_id": problem.problem_id, "prompt": problem.prompt, "answer": problem.answer,
            "n": problem.n, "c": problem.c, "samples": selectors.samples_with_tokens(problem=problem),
        })  # fmt: skip


class ResultsExportApi(APIView):
    @extend_schema(
        parameters=[ExportIn],
        responses={200: OpenApiTypes.STR},
        summary="The results table as JSON, CSV or LaTeX (an attachment)",
    )
    def get(self, request: Request, project_id: int) -> HttpResponse:
        project = project_get_for_user(project_id=project_id, user=request.user)
        query = validated(ExportIn, request.query_params)
        runs = selectors.eval_runs_for_project(project=project)
        if "benchmark" in query:
            runs = runs.filter(benchmark_id=query["benchmark"])
        table = selectors_tables.results_table(eval_runs=runs)
        kind = query["export"]
        body = {"json": exports.to_json, "csv": exports.to_csv}.get(
            kind, lambda t: exports.to_latex(t, caption=f"Results of project {project.name}")
        )(table)
        response = HttpResponse(body, content_type=f"{EXPORT_TYPES[kind]}; charset=utf-8")
        response["Content-Disposition"] = (
            f'attachment; filename="{project.slug}-results.{EXPORT_SUFFIX[kind]}"'
        )
        return response
