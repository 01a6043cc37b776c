"""``GET /api/projects/<id>/runs/table/``: every row of the project's runs table (webapp/workspaces/run_table.py)."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from webapp.api.query import parsed_query
from webapp.experiments.metric_summaries import MAX_KEY_LENGTH, MAX_SUMMARY_KEYS, SMOOTHING_WINDOW
from webapp.teams.selectors import project_get_for_user
from webapp.workspaces.run_table import MAX_TABLE_RUNS, run_table_for_project


class RunTableQueryIn(serializers.Serializer[None]):
    metrics = serializers.CharField(
        required=False, default="", allow_blank=True, max_length=MAX_SUMMARY_KEYS * (MAX_KEY_LENGTH + 1),
        help_text=f"Comma-separated metric keys to summarise (at most {MAX_SUMMARY_KEYS}), "
        "e.g. rollout/reward_mean,actor/kl.",
        error_messages={"max_length": f"At most {MAX_SUMMARY_KEYS} metric keys of at most {MAX_KEY_LENGTH} "
                        "characters each ({max_length} characters in all): ask for fewer keys."},
    )  # fmt: skip

    def validate_metrics(self, value: str) -> list[str]:
        return [key.strip() for key in value.split(",") if key.strip()]


class MetricSummaryOut(serializers.Serializer[None]):
    points = serializers.IntegerField(help_text="Points with a value (NaN and infinities are left out).")
    last_step = serializers.IntegerField()
    last = serializers.FloatField(help_text="The value at the last step that has one.")
    max = serializers.FloatField()
    min = serializers.FloatField()
    smooth_last = serializers.FloatField(help_text=f"The mean of the last {SMOOTHING_WINDOW} values.")
    smooth_max = serializers.FloatField(
        help_text=f"The highest mean of {SMOOTHING_WINDOW} consecutive values (all of them in a shorter run)."
    )
    smooth_min = serializers.FloatField(help_text="The lowest such mean.")


class RunTableRowOut(serializers.Serializer[None]):
    id = serializers.IntegerField()
    experiment = serializers.DictField(help_text="{id, name}")
    status = serializers.CharField()
    phase = serializers.CharField(help_text="What the run does before its first step, in words; blank after.")
    source = serializers.CharField()  # type: ignore[assignment]  # the run's source; shadows Field.source only for mypy
    source_label = serializers.CharField()
    created_at = serializers.DateTimeField()
    created_by = serializers.CharField(allow_null=True)
    step = serializers.IntegerField()
    max_steps = serializers.IntegerField()
    config = serializers.DictField(help_text="Dotted path -> value, for the paths not in config_shared.")
    metrics = serializers.DictField(
        child=MetricSummaryOut(), help_text="Key -> summary, for the keys asked for."
    )


class RunTableOut(serializers.Serializer[None]):
    runs = RunTableRowOut(many=True, help_text=f"The newest {MAX_TABLE_RUNS} runs, newest first.")
    total = serializers.IntegerField(help_text="Runs in the project.")
    limit = serializers.IntegerField()
    truncated = serializers.BooleanField(help_text="The project has more runs than the table shows.")
    config_paths = serializers.ListField(
        child=serializers.CharField(), help_text="Every config path, in config order."
    )
    config_paths_truncated = serializers.BooleanField()
    config_shared = serializers.DictField(
        help_text="Paths with the same value in every run shown, and that value."
    )
    config_differing = serializers.ListField(
        child=serializers.CharField(),
        help_text="Paths whose values differ between the runs (the default columns).",
    )
    metric_keys = serializers.ListField(
        child=serializers.CharField(), help_text="Every key these runs reported."
    )
    metric_keys_truncated = serializers.BooleanField()
    metrics = serializers.DictField(
        help_text='Key asked for -> {"direction": "max" | "min"}: which end is best.'
    )
    smoothing_window = serializers.IntegerField()


class RunTableApi(APIView):
    @extend_schema(
        operation_id="projects_runs_table",
        parameters=[RunTableQueryIn],
        responses=RunTableOut,
        summary="The project's runs table: runs, flattened configs and metric summaries",
    )
    def get(self, request: Request, project_id: int) -> Response:
        project = project_get_for_user(project_id=project_id, user=request.user)
        query = parsed_query(RunTableQueryIn, request)
        return Response(run_table_for_project(project=project, metric_keys=query["metrics"]))
