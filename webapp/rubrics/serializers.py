"""Rubric shapes over HTTP. Input is checked for types here and against the trainer's schema in services."""

from __future__ import annotations

from typing import Any

from rest_framework import serializers

from webapp.rubrics.models import Aggregation, Criterion, Rubric, Scale, Scorer
from webapp.rubrics.selectors import rubric_to_config


class CriterionOut(serializers.ModelSerializer[Criterion]):
    class Meta:
        model = Criterion
        fields = (
            "id",
            "position",
            "name",
            "description",
            "scale",
            "min_value",
            "max_value",
            "weight",
            "scorer",
            "rule",
            "judge",
        )


class RubricSummaryOut(serializers.ModelSerializer[Rubric]):
    created_by = serializers.CharField(source="created_by.username", default=None, read_only=True)
    criteria_count = serializers.IntegerField(read_only=True, default=None)
    config = serializers.SerializerMethodField(
        help_text="The experiment config's `rubric` section for this rubric."
    )

    class Meta:
        model = Rubric
        fields: tuple[str, ...] = (
            "id", "project", "name", "description", "aggregation", "created_by", "created_at", "updated_at",
            "criteria_count", "config",
        )  # fmt: skip

    def get_config(self, rubric: Rubric) -> dict[str, Any]:
        return rubric_to_config(rubric)


class RubricOut(RubricSummaryOut):
    criteria = CriterionOut(many=True, read_only=True)

    class Meta(RubricSummaryOut.Meta):
        fields = (*RubricSummaryOut.Meta.fields, "criteria")


class RuleIn(serializers.Serializer[None]):
    type = serializers.CharField(
        allow_blank=True, help_text="regex, length, format, json_schema or verifier."
    )
    params = serializers.DictField(required=False, default=dict)


class JudgeIn(serializers.Serializer[None]):
    prompt_template = serializers.CharField(required=False, trim_whitespace=False)
    parse_pattern = serializers.CharField(required=False, trim_whitespace=False)


class CriterionIn(serializers.Serializer[None]):
    name = serializers.CharField(max_length=80)
    description = serializers.CharField(required=False, allow_blank=True, default="")
    scale = serializers.ChoiceField(choices=Scale.choices, default=Scale.BINARY)
    min_value = serializers.FloatField(required=False, default=0.0)
    max_value = serializers.FloatField(required=False, default=1.0)
    weight = serializers.FloatField(required=False, default=1.0)
    scorer = serializers.ChoiceField(choices=Scorer.choices, default=Scorer.RULE)
    rule = RuleIn(required=False, allow_null=True, default=None)
    judge = JudgeIn(required=False, allow_null=True, default=None)


class RubricIn(serializers.Serializer[None]):
    name = serializers.CharField(max_length=120)
    description = serializers.CharField(required=False, allow_blank=True, default="")
    aggregation = serializers.ChoiceField(choices=Aggregation.choices, default=Aggregation.WEIGHTED_SUM)
    criteria = CriterionIn(many=True, help_text="The criteria in order; a PUT replaces the whole list.")
