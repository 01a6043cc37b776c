"""What the benchmarks API reads and writes (thin: the services validate the config itself)."""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from webapp.api.fields import StrictJSONField
from webapp.benchmarks.models import Benchmark, BenchmarkSource, EvalRun
from webapp.benchmarks.selectors import eval_queue_position
from webapp.core.queues import QueuePositionOut


class BenchmarkOut(serializers.ModelSerializer[Benchmark]):
    created_by = serializers.CharField(source="created_by.username", default=None, read_only=True)
    dataset_name = serializers.CharField(source="dataset.name", default=None, read_only=True)

    class Meta:
        model = Benchmark
        fields = (
            "id",
            "name",
            "description",
            "source",
            "builtin",
            "dataset",
            "dataset_name",
            "config",
            "created_by",
            "created_at",
        )


class BenchmarkIn(serializers.Serializer[None]):
    name = serializers.CharField(max_length=100)
    description = serializers.CharField(required=False, allow_blank=True, default="", max_length=10_000)
    source = serializers.ChoiceField(choices=BenchmarkSource.choices)  # type: ignore[assignment]  # DRF's Field.source
    builtin = serializers.CharField(
        required=False,
        allow_blank=True,
        default="",
        help_text="Built-in suite entry (source 'builtin'), e.g. builtin:addition.",
    )
    dataset = serializers.IntegerField(
        required=False, allow_null=True, default=None, help_text="A data file of the project (source 'file')."
    )
    verifier_version = serializers.IntegerField(
        required=False,
        allow_null=True,
        default=None,
        help_text="A saved verifier version of the project to score with.",
    )
    config = StrictJSONField(
        required=False,
        default=dict,
        help_text="trainer.evaluation.config.BenchmarkConfig fields (data, verifiers, n_samples ...).",
    )

    def validate_config(self, value: Any) -> dict[str, Any]:
        if not isinstance(value, dict):  # services lay fields over it: a list or `true` would be a 500 there
            raise serializers.ValidationError(
                f"Expected a JSON object of BenchmarkConfig fields, got {type(value).__name__}."
            )
        return value


class BenchmarkFileIn(serializers.Serializer[None]):
    file = serializers.FileField(help_text="A .jsonl, .json, .csv or .parquet file with one problem per row.")
    name = serializers.CharField(required=False, allow_blank=True, default="", max_length=200)
    problem_field = serializers.CharField(required=False, default="problem", max_length=200)
    answer_field = serializers.CharField(required=False, default="answer", max_length=200)


class EvalRunOut(serializers.ModelSerializer[EvalRun]):
    benchmark_name = serializers.CharField(source="benchmark.name", read_only=True)

    class Meta:
        model = EvalRun
        fields: tuple[str, ...] = (
            "id", "benchmark", "benchmark_name", "target_kind", "experiment", "run", "checkpoint", "step",
            "model_path", "label", "status", "problems_total", "problems_done", "metrics", "ci", "timings",
            "error_message", "cancel_requested", "attempts", "created_at", "started_at", "finished_at",
        )  # fmt: skip


class EvalRunDetailOut(EvalRunOut):
    queue_position = serializers.SerializerMethodField(
        help_text="While queued: what is ahead of it; else null."
    )

    class Meta(EvalRunOut.Meta):
        fields = (*EvalRunOut.Meta.fields, "queue_position")

    @extend_schema_field(QueuePositionOut(allow_null=True))
    def get_queue_position(self, eval_run: EvalRun) -> dict[str, Any] | None:
        position = eval_queue_position(eval_run=eval_run)
        return None if position is None else dict(QueuePositionOut(position).data)


# Ids are 64-bit primary keys: a larger integer is refused here (400) instead of overflowing SQLite's driver.
MAX_ROW_ID = 2**63 - 1


class EvalLaunchIn(serializers.Serializer[None]):
    experiments = serializers.ListField(
        child=serializers.IntegerField(min_value=1, max_value=MAX_ROW_ID),
        required=False,
        default=list,
        max_length=100,
        help_text="Experiments whose base model (model.name_or_path) to evaluate.",
    )
    checkpoints = serializers.ListField(
        child=serializers.IntegerField(min_value=1, max_value=MAX_ROW_ID),
        required=False,
        default=list,
        max_length=100,
        help_text="Checkpoint ids (GET /api/runs/<id>/checkpoints/) to evaluate.",
    )


class ProblemRowOut(serializers.Serializer[None]):
    """One problem of an evaluation (webapp.benchmarks.results.problem_row)."""

    id = serializers.IntegerField()
    index = serializers.IntegerField(help_text="The problem's position in the benchmark.")
    problem_id = serializers.CharField()
    seed = serializers.IntegerField()
    prompt = serializers.CharField(help_text="The prompt as the model saw it (first 300 characters).")
    answer = serializers.CharField(allow_null=True)
    n = serializers.IntegerField(help_text="Samples drawn.")
    c = serializers.IntegerField(help_text="Samples verified correct.")


class SampleOut(serializers.Serializer[None]):
    id = serializers.IntegerField()
    index = serializers.IntegerField()
    text = serializers.CharField()
    finish_reason = serializers.CharField()
    length = serializers.IntegerField()
    reward = serializers.FloatField(allow_null=True)
    correct = serializers.BooleanField()
    extracted_answer = serializers.CharField(allow_null=True)
    detail = StrictJSONField()
    tokens = serializers.ListField(child=serializers.CharField())
    token_ids = serializers.ListField(child=serializers.IntegerField())
    channels = StrictJSONField(help_text="{'logprob': [float | null per token]}")


class ProblemSamplesOut(serializers.Serializer[None]):
    problem_id = serializers.CharField()
    prompt = serializers.CharField()
    answer = serializers.CharField(allow_null=True)
    n = serializers.IntegerField()
    c = serializers.IntegerField()
    samples = SampleOut(many=True)


class ProblemFilterIn(serializers.Serializer[None]):
    correct = serializers.BooleanField(
        required=False,
        allow_null=True,
        default=None,
        help_text="true: every sample right; false: at least one wrong.",
    )


class ExportIn(serializers.Serializer[None]):
    export = serializers.ChoiceField(choices=["json", "csv", "latex"], default="json")
    benchmark = serializers.IntegerField(required=False, help_text="Only this benchmark's columns.")


def validated(serializer: type[serializers.Serializer[None]], data: Any) -> dict[str, Any]:
    s = serializer(data=data)
    s.is_valid(raise_exception=True)
    return dict(s.validated_data)
