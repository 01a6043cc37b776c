"""Data files over HTTP: list a project's datasets, preview a file before uploading it, upload one
(multipart), delete one that nothing uses.

A dataset is named by its id: configs say ``data.path: dataset:<id>`` (webapp/experiments/config_paths.py
resolves it for the worker, for the same project only). The server path of the stored file never leaves
the server.
"""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

from drf_spectacular.utils import extend_schema
from rest_framework import serializers, status
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from webapp.api.parsers import StrictFormParser, StrictMultiPartParser
from webapp.datafiles.models import Dataset, dataset_reference
from webapp.datafiles.preview import PREVIEW_ROWS, SHOWN_PROBLEMS
from webapp.datafiles.selectors import dataset_get_for_user, datasets_for_project
from webapp.datafiles.services import dataset_delete, dataset_preview, dataset_upload
from webapp.teams.selectors import project_get_for_user


class DatasetOut(serializers.ModelSerializer[Dataset]):
    created_by = serializers.CharField(source="created_by.username", default=None, read_only=True)
    ref = serializers.SerializerMethodField(help_text="How a config names this file: data.path dataset:<id>.")
    config_data = serializers.SerializerMethodField(help_text="The `data` section that trains on this file.")

    class Meta:
        model = Dataset
        fields = (
            "id", "ref", "name", "format", "rows", "fields", "prompt_field", "answer_field",
            "created_by", "created_at", "config_data",
        )  # fmt: skip

    def get_ref(self, dataset: Dataset) -> str:
        return dataset_reference(dataset)

    def get_config_data(self, dataset: Dataset) -> dict[str, Any]:
        return {
            "source": "file",
            "path": dataset_reference(dataset),
            "format": dataset.format,
            "prompt_field": dataset.prompt_field,
            "answer_field": dataset.answer_field or None,
        }


class DatasetUploadIn(serializers.Serializer[None]):
    file = serializers.FileField(help_text="A .jsonl, .json, .csv or .parquet file.")
    name = serializers.CharField(required=False, allow_blank=True, default="", max_length=200)
    prompt_field = serializers.CharField(required=False, default="prompt", max_length=200)
    answer_field = serializers.CharField(
        required=False,
        default="answer",
        allow_blank=True,
        max_length=200,
        help_text="Blank for label-free data.",
    )


class DatasetListApi(APIView):
    parser_classes = (StrictMultiPartParser, StrictFormParser)

    @extend_schema(responses=DatasetOut(many=True), summary="Data files of a project")
    def get(self, request: Request, project_id: int) -> Response:
        project = project_get_for_user(project_id=project_id, user=request.user)
        return Response(DatasetOut(datasets_for_project(project=project), many=True).data)

    @extend_schema(request=DatasetUploadIn, responses={201: DatasetOut}, summary="Upload a data file")
    def post(self, request: Request, project_id: int) -> Response:
        project = project_get_for_user(project_id=project_id, user=request.user)
        data = DatasetUploadIn(data=request.data)
        data.is_valid(raise_exception=True)
        upload = data.validated_data["file"]
        dataset = dataset_upload(
            project=project,
            actor=request.user,
            file=upload,
            filename=upload.name or "data",
            size=upload.size or 0,
            name=data.validated_data["name"],
            prompt_field=data.validated_data["prompt_field"],
            answer_field=data.validated_data["answer_field"] or None,
        )
        return Response(DatasetOut(dataset).data, status=status.HTTP_201_CREATED)


class DatasetPreviewIn(serializers.Serializer[None]):
    file = serializers.FileField(help_text="A .jsonl, .json, .csv or .parquet file.")
    prompt_field = serializers.CharField(
        required=False, allow_blank=True, default="", max_length=200,
        help_text="The column with the problem text; blank: guessed from the usual names.",
    )  # fmt: skip
    answer_field = serializers.CharField(
        required=False, allow_blank=True, allow_null=True, default=None, max_length=200,
        help_text="The column with the reference answer; blank: label-free; left out: guessed.",
    )  # fmt: skip


class PreviewRowOut(serializers.Serializer[None]):
    row = serializers.IntegerField()
    where = serializers.CharField(help_text='Where the row sits: "line 7", "row 3 (line 5)", "record 2".')
    cells = serializers.ListField(child=serializers.CharField(allow_null=True), help_text="One per column.")


class RowProblemOut(serializers.Serializer[None]):
    row = serializers.IntegerField()
    where = serializers.CharField()
    column = serializers.CharField(allow_null=True, help_text="Null: the row itself does not parse.")
    message = serializers.CharField()


class DatasetPreviewOut(serializers.Serializer[None]):
    filename = serializers.CharField()
    format = serializers.CharField()
    rows = serializers.IntegerField(help_text="Data rows in the file, bad ones included.")
    columns = serializers.ListField(child=serializers.CharField())
    head = PreviewRowOut(many=True, help_text=f"The first {PREVIEW_ROWS} rows that parse, cells cut short.")
    prompt_field = serializers.CharField()
    answer_field = serializers.CharField(allow_null=True)
    answer_guess = serializers.ChoiceField(
        choices=["chosen", "guessed", "none_found"],
        help_text="How answer_field was decided: chosen by the request; guessed from the column names (confirm "
        "it before saving); none_found: no column looks like an answer, so the preview is label-free.",
    )
    answer_candidates = serializers.ListField(
        child=serializers.CharField(),
        help_text="Columns whose names look like a reference answer, likeliest first.",
    )
    problems = RowProblemOut(many=True, help_text=f"The first {SHOWN_PROBLEMS} bad rows.")
    problem_count = serializers.IntegerField(help_text="Every bad row.")
    name = serializers.CharField(help_text="The name the dataset gets unless another is given.")
    name_taken = serializers.BooleanField()


class DatasetPreviewApi(APIView):
    parser_classes = (StrictMultiPartParser,)

    @extend_schema(
        request=DatasetPreviewIn, responses=DatasetPreviewOut, summary="Preview a data file without storing it",
        description="The columns, the first rows and every row that uploading it with this mapping would refuse.",
    )  # fmt: skip
    def post(self, request: Request, project_id: int) -> Response:
        project = project_get_for_user(project_id=project_id, user=request.user)
        data = DatasetPreviewIn(data=request.data)
        data.is_valid(raise_exception=True)
        upload = data.validated_data["file"]
        answer = data.validated_data["answer_field"]
        preview = dataset_preview(
            project=project,
            actor=request.user,
            file=upload,
            filename=upload.name or "data",
            size=upload.size or 0,
            prompt_field=data.validated_data["prompt_field"] or None,
            answer_field=answer or None,
            answer_given=answer is not None,
        )
        return Response(asdict(preview))


class DatasetDetailApi(APIView):
    @extend_schema(responses=DatasetOut, summary="A data file")
    def get(self, request: Request, dataset_id: int) -> Response:
        return Response(DatasetOut(dataset_get_for_user(dataset_id=dataset_id, user=request.user)).data)

    @extend_schema(
        responses={204: None}, summary="Delete a data file that no experiment, run or benchmark uses"
    )
    def delete(self, request: Request, dataset_id: int) -> Response:
        dataset_delete(
            dataset=dataset_get_for_user(dataset_id=dataset_id, user=request.user), actor=request.user
        )
        return Response(status=status.HTTP_204_NO_CONTENT)
