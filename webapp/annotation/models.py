"""Team annotation of rubric scores and pairwise preferences: a task, its items (snapshots of rollouts),
and who scores which.

An item is a snapshot (prompt, completion, reference answer, where it came from, and the machine scores
the rubric's rule/judge criteria already gave it) so that deleting a run or editing a rubric never changes
what people annotated. A task also snapshots its rubric's criteria; scores are keyed by criterion name.
A pairwise task's item holds one prompt and two completions (``completion`` on the left,
``completion_right`` on the right, the order drawn once with the task's seed), and an assignment holds a
``choice`` instead of scores (selectors_pairwise.py, pairwise_agreement.py).
"""

from __future__ import annotations

from django.conf import settings
from django.db import models

from webapp.experiments.models import Rollout, Run
from webapp.rubrics.models import Rubric
from webapp.teams.models import Project


class SourceKind(models.TextChoices):
    RUN = "run", "A run's rollouts"
    BENCHMARK = "benchmark", "A benchmark's samples"
    UPLOAD = "upload", "An uploaded pairs file"


class TaskKind(models.TextChoices):
    RUBRIC = "rubric", "Rubric scoring"
    PAIRWISE = "pairwise", "Pairwise preferences"


class Choice(models.TextChoices):
    """A pairwise judgement: which of the two completions shown is better."""

    LEFT = "left", "Left is better"
    RIGHT = "right", "Right is better"
    TIE = "tie", "Tie"
    BOTH_BAD = "both_bad", "Both bad"


class AnnotationTask(models.Model):
    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="annotation_tasks")
    kind = models.CharField(
        max_length=16, choices=TaskKind.choices, default=TaskKind.RUBRIC,
        help_text="rubric: score each item on the rubric's criteria; pairwise: pick the better of two completions.",
    )  # fmt: skip
    rubric = models.ForeignKey(Rubric, null=True, on_delete=models.SET_NULL, related_name="annotation_tasks")
    name = models.CharField(max_length=200)
    instructions = models.TextField(blank=True, default="")
    source_kind = models.CharField(max_length=16, choices=SourceKind.choices, default=SourceKind.RUN)
    run = models.ForeignKey(
        Run, null=True, blank=True, on_delete=models.SET_NULL, related_name="annotation_tasks"
    )
    criteria = models.JSONField(
        default=list,
        help_text="The rubric's criteria at creation: name, description, scale, min, max, scorer.",
    )
    sampling = models.JSONField(default=dict, help_text="The sampling rule (webapp/annotation/sampling.py).")
    annotators_per_item = models.PositiveIntegerField(default=2)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ("-created_at", "-id")

    def __str__(self) -> str:
        return self.name


class AnnotationItem(models.Model):
    task = models.ForeignKey(AnnotationTask, on_delete=models.CASCADE, related_name="items")
    position = models.PositiveIntegerField(help_text="Order within the task, from 0.")
    source_kind = models.CharField(max_length=16, choices=SourceKind.choices, default=SourceKind.RUN)
    rollout = models.ForeignKey(Rollout, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    source_run_id = models.PositiveIntegerField(null=True, blank=True)
    source_step = models.PositiveIntegerField(null=True, blank=True)
    source_rollout_id = models.PositiveIntegerField(null=True, blank=True)
    source = models.JSONField(
        default=dict, blank=True, help_text="Other origin ids (a benchmark sample later)."
    )
    prompt = models.TextField()
    completion = models.TextField(help_text="The completion; in a pairwise task, the one shown on the left.")
    completion_right = models.TextField(
        blank=True, default="", help_text="Pairwise tasks: the completion shown on the right."
    )
    pair = models.JSONField(
        default=dict, blank=True,
        help_text="Pairwise tasks: where each side came from ({left: {...}, right: {...}}) and the seed's swap.",
    )  # fmt: skip
    truth = models.CharField(
        max_length=8, blank=True, default="",
        help_text="Pairwise tasks from a chosen/rejected file: the side holding 'chosen'; never shown to annotators.",
    )  # fmt: skip
    reference_answer = models.TextField(null=True, blank=True)
    reward = models.FloatField(null=True, blank=True)
    correct = models.BooleanField(null=True, blank=True)
    machine_scores = models.JSONField(
        default=dict,
        help_text="criterion name -> {scorer, score, detail} from the rollout's rubric/<name> keys.",
    )

    class Meta:
        ordering = ("task_id", "position")
        constraints = (models.UniqueConstraint(fields=["task", "position"], name="one_item_per_position"),)

    def __str__(self) -> str:
        return f"item {self.position} of {self.task}"


class AssignmentStatus(models.TextChoices):
    PENDING = "pending", "Pending"
    DRAFT = "draft", "Draft"
    SUBMITTED = "submitted", "Submitted"
    SKIPPED = "skipped", "Skipped"


class Assignment(models.Model):
    """One annotator's work on one item: their scores per criterion and where they are with it."""

    item = models.ForeignKey(AnnotationItem, on_delete=models.CASCADE, related_name="assignments")
    annotator = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="annotation_assignments"
    )
    status = models.CharField(
        max_length=16, choices=AssignmentStatus.choices, default=AssignmentStatus.PENDING, db_index=True
    )
    scores = models.JSONField(default=dict, help_text="criterion name -> score on the criterion's scale.")
    choice = models.CharField(
        max_length=8, choices=Choice.choices, blank=True, default="",
        help_text="Pairwise tasks: the judgement (blank until chosen).",
    )  # fmt: skip
    comment = models.TextField(blank=True, default="", help_text="A comment; the reason in a pairwise task.")
    updated_at = models.DateTimeField(auto_now=True)
    submitted_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ("item__task_id", "item__position", "annotator_id")
        constraints = (
            models.UniqueConstraint(fields=["item", "annotator"], name="one_assignment_per_annotator"),
        )
        indexes = (models.Index(fields=["annotator", "status"], name="assignment_annotator_status"),)

    def __str__(self) -> str:
        return f"{self.annotator} on {self.item} ({self.status})"


class Adjudication(models.Model):
    """The final score of one item on one criterion, set by an owner or admin where annotators disagree.

    One per (item, criterion), changed in place (who and when are the last change's); exports carry it
    next to the annotators' scores, and the disagreement view counts an item with one as resolved.
    """

    item = models.ForeignKey(AnnotationItem, on_delete=models.CASCADE, related_name="adjudications")
    criterion = models.CharField(max_length=80, help_text="A criterion name of the task's criteria snapshot.")
    score = models.FloatField(help_text="On the criterion's scale, checked like an annotator's score.")
    note = models.TextField(blank=True, default="", help_text="Why this score (optional).")
    decided_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+"
    )
    decided_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ("item_id", "criterion")
        constraints = (
            models.UniqueConstraint(fields=["item", "criterion"], name="one_adjudication_per_criterion"),
        )

    def __str__(self) -> str:
        return f"{self.criterion} = {self.score:g} on {self.item}"


class PairwiseAdjudication(models.Model):
    """The final choice of one pairwise item, set by an owner or admin where annotators disagree.

    One per item, changed in place; the item's final decision is this, else the majority of the submitted
    choices (selectors_pairwise.final_decision).
    """

    item = models.OneToOneField(
        AnnotationItem, on_delete=models.CASCADE, related_name="pairwise_adjudication"
    )
    choice = models.CharField(max_length=8, choices=Choice.choices)
    note = models.TextField(blank=True, default="", help_text="Why this choice (optional).")
    decided_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+"
    )
    decided_at = models.DateTimeField(auto_now=True)

    def __str__(self) -> str:
        return f"{self.choice} on {self.item}"


class ScorerKind(models.TextChoices):
    VERIFIER = "verifier", "A saved verifier version"
    RUBRIC = "rubric", "A rubric's rule criteria"


class ScoringStatus(models.TextChoices):
    QUEUED = "queued", "Queued"
    RUNNING = "running", "Running"
    SUCCEEDED = "succeeded", "Succeeded"
    FAILED = "failed", "Failed"


SCORING_FINISHED = frozenset({ScoringStatus.SUCCEEDED, ScoringStatus.FAILED})


class ScoringJob(models.Model):
    """Scoring a task's items with a verifier version or a rubric's rule criteria, on a worker.

    The machine scores then sit next to the people's (``ItemScore``) so any scorer's agreement with the
    annotators can be measured, not only the rubric a run trained with. The scorer is snapshotted
    (``scorer``: the verifier name and params, or the rule criteria as trainer config) when the job is
    queued, so later edits to the rubric do not change what the job scores with.
    """

    task = models.ForeignKey(AnnotationTask, on_delete=models.CASCADE, related_name="scoring_jobs")
    kind = models.CharField(max_length=16, choices=ScorerKind.choices)
    verifier_version = models.ForeignKey(
        "verification.VerifierVersion", null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    rubric = models.ForeignKey(Rubric, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    label = models.CharField(max_length=200, help_text="What the agreement picker calls this scorer.")
    scorer = models.JSONField(default=dict, help_text="The verifier or the rule criteria, as at queueing.")
    status = models.CharField(
        max_length=16, choices=ScoringStatus.choices, default=ScoringStatus.QUEUED, db_index=True
    )
    done = models.PositiveIntegerField(default=0)
    total = models.PositiveIntegerField(default=0)
    error = models.TextField(blank=True, default="")
    attempts = models.PositiveIntegerField(default=0)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ("-created_at", "-id")

    def __str__(self) -> str:
        return f"scoring job {self.pk} of {self.task} with {self.label} ({self.status})"

    @property
    def finished(self) -> bool:
        return self.status in SCORING_FINISHED


class ItemScore(models.Model):
    """One machine score of one item from a scoring job: ``key`` is 'reward' for a verifier, the
    criterion name for a rubric rule; ``score`` is None where the scorer could not score it."""

    job = models.ForeignKey(ScoringJob, on_delete=models.CASCADE, related_name="scores")
    item = models.ForeignKey(AnnotationItem, on_delete=models.CASCADE, related_name="+")
    key = models.CharField(max_length=80)
    score = models.FloatField(null=True, blank=True)
    detail = models.JSONField(default=dict, blank=True)

    class Meta:
        ordering = ("job_id", "item_id", "key")
        constraints = (models.UniqueConstraint(fields=["job", "item", "key"], name="one_item_score_per_key"),)
