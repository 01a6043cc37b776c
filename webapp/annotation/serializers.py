"""Input and output shapes of the annotation API (views live in api.py)."""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from webapp.annotation.models import (
    Adjudication,
    AnnotationItem,
    AnnotationTask,
    Assignment,
    AssignmentStatus,
    Choice,
    PairwiseAdjudication,
    ScoringJob,
)
from webapp.annotation.pairing import MAX_PAIRS
from webapp.annotation.sampling import describe_sampling
from webapp.annotation.services import MAX_ANNOTATORS_PER_ITEM, MAX_NOTE_CHARS
from webapp.annotation.services_pairwise import MAX_REASON_CHARS
from webapp.api.fields import StrictJSONField


def task_sampling_text(task: AnnotationTask) -> str:
    """The task's sampling (rubric) or pairing (pairwise) rule in words."""
    if task.kind == "pairwise":
        from webapp.annotation.pairing import describe_pairing

        return describe_pairing(task.sampling, source_kind=task.source_kind)
    return describe_sampling(task.sampling)


# Plain strings in the schema: other components have fields named "kind" with other choice sets, and a
# second enum of that name makes drf-spectacular fall back to hashed enum names for all of them.
@extend_schema_field({"type": "string", "description": "rubric or pairwise"})
class TaskKindField(serializers.CharField):
    pass


@extend_schema_field({"type": "string", "enum": ["pairwise"], "description": "pairwise"})
class PairwiseKindField(serializers.ChoiceField):
    pass


class TaskOut(serializers.ModelSerializer[AnnotationTask]):
    kind = TaskKindField(
        read_only=True, help_text="rubric: score on a rubric; pairwise: pick the better of two."
    )
    rubric_name = serializers.CharField(source="rubric.name", default=None, read_only=True)
    sampling_text = serializers.SerializerMethodField(help_text="The sampling rule in words.")
    created_by = serializers.CharField(source="created_by.username", default=None, read_only=True)
    items_count = serializers.IntegerField(
        read_only=True, default=None, help_text="How many items the task has."
    )
    mine = serializers.SerializerMethodField(help_text="Your own assignments by status.")

    class Meta:
        model = AnnotationTask
        fields = (
            "id", "project", "kind", "name", "instructions", "rubric", "rubric_name", "source_kind", "run", "criteria",
            "sampling", "sampling_text", "annotators_per_item", "created_by", "created_at", "items_count", "mine",
        )  # fmt: skip

    def get_sampling_text(self, task: AnnotationTask) -> str:
        return task_sampling_text(task)

    def get_mine(self, task: AnnotationTask) -> dict[str, int] | None:
        counts = {s.value: getattr(task, f"mine_{s.value}", None) for s in AssignmentStatus}
        return None if None in counts.values() else counts  # type: ignore[return-value]


class TaskFromRunIn(serializers.Serializer[None]):
    run = serializers.IntegerField(required=False, help_text="Id of the run whose rollouts are sampled.")
    eval_run = serializers.IntegerField(
        required=False,
        help_text="Or: id of the evaluation whose benchmark samples are sampled (give one of the two).",
    )
    rubric = serializers.IntegerField(help_text="Id of a rubric of the same project.")
    name = serializers.CharField(max_length=200, required=False, allow_blank=True, default="")
    instructions = serializers.CharField(required=False, allow_blank=True, default="")
    annotators_per_item = serializers.IntegerField(
        default=2, min_value=1, help_text="k distinct people per item."
    )
    annotators = serializers.ListField(
        child=serializers.CharField(max_length=150),
        required=False,
        help_text="Usernames to assign (default: every member with the annotator role or higher).",
    )
    sampling = StrictJSONField(
        required=False,
        default=dict,
        help_text='e.g. {"strategy": "random"|"stratified", "n": 20, "seed": 0, "last_step_only": false, '
        '"only_incorrect": false, "strata": 4, "steps": []}.',
    )


class ReassignIn(serializers.Serializer[None]):
    from_annotator = serializers.CharField(max_length=150, help_text="Username whose unfinished work moves.")
    to_annotator = serializers.CharField(
        max_length=150, help_text="Username who takes it (annotator role or higher)."
    )


class ItemOut(serializers.ModelSerializer[AnnotationItem]):
    class Meta:
        model = AnnotationItem
        fields = (
            "id", "position", "source_kind", "source_run_id", "source_step", "source_rollout_id", "source",
            "prompt", "completion", "completion_right", "reference_answer", "reward", "correct", "machine_scores",
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
        fields = ("id", "status", "scores", "choice", "comment", "updated_at", "submitted_at", "item")


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


class AdjudicateIn(serializers.Serializer[None]):
    criterion = serializers.CharField(max_length=80, help_text="A criterion name of the task.")
    score = serializers.FloatField(
        allow_null=True, help_text="The final score on the criterion's scale; null removes it."
    )
    note = serializers.CharField(required=False, allow_blank=True, default="", max_length=MAX_NOTE_CHARS)


class AdjudicationOut(serializers.ModelSerializer[Adjudication]):
    decided_by = serializers.CharField(source="decided_by.username", default=None, read_only=True)

    class Meta:
        model = Adjudication
        fields = ("item", "criterion", "score", "note", "decided_by", "decided_at")


class DisagreementQueryIn(serializers.Serializer[None]):
    criterion = serializers.CharField(
        required=False, allow_blank=True, max_length=80, help_text="Rank by one criterion (default: overall)."
    )
    hide_resolved = serializers.BooleanField(
        required=False, default=False, help_text="Leave out items with a final score."
    )
    page = serializers.IntegerField(required=False, default=1, min_value=1, max_value=10_000)


class MachineAgreementQueryIn(serializers.Serializer[None]):
    scorer = serializers.CharField(max_length=200, help_text="A key from machine-scorers/.")
    criterion = serializers.CharField(
        required=False,
        default="overall",
        max_length=80,
        help_text="A criterion name, or overall (the weighted mean of every criterion).",
    )


class MachineScorerOut(serializers.Serializer[Any]):
    key = serializers.CharField()
    label = serializers.CharField()  # type: ignore[assignment]  # a field, popped from the class by DRF's metaclass
    group = serializers.CharField()
    low = serializers.FloatField(
        allow_null=True, help_text="Scale used to put scores on 0-1; null: as stored."
    )
    high = serializers.FloatField(allow_null=True)
    items = serializers.IntegerField(help_text="Items of the task this scorer has a score for.")


class MachineAgreementOut(serializers.Serializer[Any]):
    scorer = MachineScorerOut()
    criterion = serializers.CharField()
    normalised = serializers.BooleanField(
        help_text="Whether the machine scores were put on 0-1 by their scale."
    )
    alpha = serializers.FloatField(
        allow_null=True, help_text="Krippendorff's alpha (interval), machine vs people's mean."
    )
    spearman = serializers.FloatField(allow_null=True)
    pearson = serializers.FloatField(allow_null=True)
    items = serializers.IntegerField(help_text="Items with both scores.")
    note = serializers.CharField()


class ScoringJobIn(serializers.Serializer[None]):
    verifier_version = serializers.IntegerField(
        required=False, help_text="Id of a verifier version of the project."
    )
    rubric = serializers.IntegerField(
        required=False, help_text="Or: id of a rubric of the project (its rule criteria)."
    )


@extend_schema_field({"type": "string", "description": "queued, running, succeeded or failed"})
class ScoringStatusField(serializers.CharField):
    pass


class ScoringJobOut(serializers.ModelSerializer[ScoringJob]):
    status = ScoringStatusField(read_only=True)
    kind = serializers.CharField(read_only=True, help_text="verifier or rubric")
    created_by = serializers.CharField(source="created_by.username", default=None, read_only=True)

    class Meta:
        model = ScoringJob
        fields = ("id", "task", "kind", "verifier_version", "rubric", "label", "scorer", "status", "done", "total",
                  "error", "attempts", "created_by", "created_at", "finished_at")  # fmt: skip


class PairingIn(serializers.Serializer[None]):
    n = serializers.IntegerField(default=20, min_value=1, max_value=MAX_PAIRS, help_text="How many pairs.")
    seed = serializers.IntegerField(default=0, min_value=0, max_value=2**32 - 1)
    step = serializers.IntegerField(
        required=False, allow_null=True, default=None, min_value=0,
        help_text="A run's step (default: its last step); leave empty for an evaluation.",
    )  # fmt: skip
    only_differing_outcome = serializers.BooleanField(
        default=False, help_text="Only pairs where one completion is verified correct and the other not."
    )


class PairwiseTaskIn(serializers.Serializer[None]):
    kind = PairwiseKindField(choices=["pairwise"], help_text="pairwise")
    run = serializers.IntegerField(required=False, help_text="Pairs of a run's rollouts of one prompt.")
    eval_run = serializers.IntegerField(
        required=False, help_text="Or: pairs of an evaluation's samples of one problem."
    )
    file = serializers.FileField(
        required=False,
        help_text="Or (multipart): a pairs file, JSONL rows {prompt, completion_a, completion_b[, answer]} or "
        "{prompt, chosen, rejected[, answer]} (.json, .csv and .parquet too).",
    )
    dataset = serializers.IntegerField(
        required=False, help_text="Or: an uploaded dataset of the project holding pairs."
    )
    name = serializers.CharField(max_length=200, required=False, allow_blank=True, default="")
    instructions = serializers.CharField(required=False, allow_blank=True, default="", max_length=20_000)
    annotators_per_item = serializers.IntegerField(default=2, min_value=1, max_value=MAX_ANNOTATORS_PER_ITEM)
    annotators = serializers.ListField(
        child=serializers.CharField(max_length=150), required=False, max_length=500
    )
    pairing = PairingIn(
        required=False, help_text="For run and eval_run: n, seed, step, only_differing_outcome."
    )
    seed = serializers.IntegerField(
        default=0,
        min_value=0,
        max_value=2**32 - 1,
        help_text="For a file: the seed that draws each row's sides.",
    )


class JudgementIn(serializers.Serializer[None]):
    choice = serializers.ChoiceField(
        choices=Choice.choices, required=False, allow_blank=True, allow_null=True,
        help_text="left, right, tie or both_bad (a draft may leave it empty).",
    )  # fmt: skip
    reason = serializers.CharField(required=False, allow_blank=True, max_length=MAX_REASON_CHARS)


class PairwiseAdjudicateIn(serializers.Serializer[None]):
    choice = serializers.ChoiceField(
        choices=Choice.choices, allow_null=True, help_text="The final choice; null removes the adjudication."
    )
    note = serializers.CharField(required=False, allow_blank=True, default="", max_length=MAX_NOTE_CHARS)


class PairwiseAdjudicationOut(serializers.ModelSerializer[PairwiseAdjudication]):
    decided_by = serializers.CharField(source="decided_by.username", default=None, read_only=True)

    class Meta:
        model = PairwiseAdjudication
        fields = ("item", "choice", "note", "decided_by", "decided_at")
