"""Input and output shapes of the annotation API (views live in api.py)."""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from webapp.annotation.models import AnnotationItem, AnnotationTask, Assignment, AssignmentStatus


class TaskOut(serializers.ModelSerializer[AnnotationTask]):
    rubric_name = serializers.CharField(source="rubric.name", default=None, read_only=True)
    created_by = serializers.CharField(source="created_by.username", default=None, read_only=True)
    items_count = serializers.IntegerField(read_only=True, default=None, help_text="How many items the task has.")
    mine = serializers.SerializerMethodField(help_text="Your own assignments by status.")

    class Meta:
        model = AnnotationTask
        fields = (
            "id", "project", "name", "instructions", "rubric", "rubric_name", "source_kind", "run", "criteria",
            "sampling", "annotators_per_item", "created_by", "created_at", "items_count", "mine",
        )  # fmt: skip

    def get_mine(self, task: AnnotationTask) -> dict[str, int] | None:
        counts = {s.value: getattr(task, f"mine_{s.value}", None) for s in AssignmentStatus}
        return None if None in counts.values() else counts  # type: ignore[return-value]


class TaskFromRunIn(serializers.Serializer[None]):
    run = serializers.IntegerField(required=False, help_text="Id of the run whose rollouts are sampled.")
    eval_run = serializers.IntegerField(
        required=False, help_text="Or: id of the evaluation whose benchmark samples are sampled (give one of the two)."
    )
    rubric = serializers.IntegerField(help_text="Id of a rubric of the same project.")
    name = serializers.CharField(max_length=200, required=False, allow_blank=True, default="")
    instructions = serializers.CharField(required=False, allow_blank=True, default="")
    annotators_per_item = serializers.IntegerField(default=2, min_value=1, help_text="k distinct people per item.")
    annotators = serializers.ListField(
        child=serializers.CharField(max_length=150),
        required=False,
        help_text="Usernames to assign (default: every member with the annotator role or higher).",
    )
    sampling = serializers.JSONField(
        required=False,
        default=dict,
        help_text='e.g. {"strategy": "random"|"stratified", "n": 20, "seed": 0, "last_step_only": false, '
        '"only_incorrect": false, "strata": 4, "steps": []}.',
    )


class ReassignIn(serializers.Serializer[None]):
    from_annotator = serializers.CharField(max_length=150, help_text="Username whose unfinished work moves.")
    to_annotator = serializers.CharField(max_length=150, help_text="Username who takes it (annotator role or higher).")


class ItemOut(serializers.ModelSerializer[AnnotationItem]):
    class Meta:
        model = AnnotationItem
        fields = (
            "id", "position", "source_kind", "source_run_id", "source_step", "source_rollout_id", "source",
            "prompt", "completion", "reference_answer", "reward", "correct", "machine_scores",
        )  # fmt: skip


# Described as a plain string: a second enum of fields named "status" (runs already have one) makes
# drf-spectacular fall back to hashed enum names for all of them.
@extend_schema_field({"type": "string", "description": "pending, draft, submitted or skipped"})
class AssignmentStatusField(serializers.ChoiceField):
    pass


class AssignmentOut(serializers.ModelSerializer[Assignment]):
    item = ItemOut(read_only=True)
    status = AssignmentStatusField(choices=AssignmentStatus.choices, read_only=True)

    class Meta:
        model = Assignment
        fields = ("id", "status", "scores", "comment", "updated_at", "submitted_at", "item")


class AssignmentWorkIn(serializers.Serializer[None]):
    scores = serializers.DictField(
        child=serializers.FloatField(allow_null=True), help_text="criterion name -> score (null clears it)."
    )
    comment = serializers.CharField(required=False, allow_blank=True, max_length=5000)


class QueueFilterIn(serializers.Serializer[None]):
    status = serializers.ChoiceField(choices=AssignmentStatus.choices, required=False)


class ProgressOut(serializers.Serializer[Any]):
    annotator = serializers.CharField()
    pending = serializers.IntegerField()
    draft = serializers.IntegerField()
    submitted = serializers.IntegerField()
    skipped = serializers.IntegerField()
    total = serializers.IntegerField()
    done_fraction = serializers.FloatField()


class AlphaOut(serializers.Serializer[Any]):
    alpha = serializers.FloatField(allow_null=True, help_text="Krippendorff's alpha (krippendorff package).")
    items = serializers.IntegerField(help_text="Items behind the number.")
    level = serializers.CharField(help_text="nominal (binary), ordinal (1-5) or interval (range).")
    note = serializers.CharField(help_text="Why alpha is missing, when it is.")


class JudgeAgreementOut(AlphaOut):
    exact_agreement = serializers.FloatField(allow_null=True)
    ties = serializers.IntegerField(help_text="Binary items whose people split evenly (left out).")


class CriterionAgreementOut(serializers.Serializer[Any]):
    criterion = serializers.CharField()
    scale = serializers.CharField()
    scorer = serializers.CharField()
    human = AlphaOut()
    judge_vs_human = JudgeAgreementOut(allow_null=True)
