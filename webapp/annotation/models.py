"""Team annotation of rubric scores: a task, its items (snapshots of rollouts), and who scores which.

An item is a snapshot (prompt, completion, reference answer, where it came from, and the machine scores
the rubric's rule/judge criteria already gave it) so that deleting a run or editing a rubric never changes
what people annotated. A task also snapshots its rubric's criteria; scores are keyed by criterion name.
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


class AnnotationTask(models.Model):
    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="annotation_tasks")
    rubric = models.ForeignKey(Rubric, null=True, on_delete=models.SET_NULL, related_name="annotation_tasks")
    name = models.CharField(max_length=200)
    instructions = models.TextField(blank=True, default="")
    source_kind = models.CharField(max_length=16, choices=SourceKind.choices, default=SourceKind.RUN)
    run = models.ForeignKey(Run, null=True, blank=True, on_delete=models.SET_NULL, related_name="annotation_tasks")
    criteria = models.JSONField(
        default=list, help_text="The rubric's criteria at creation: name, description, scale, min, max, scorer."
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
    source = models.JSONField(default=dict, blank=True, help_text="Other origin ids (a benchmark sample later).")
    prompt = models.TextField()
    completion = models.TextField()
    reference_answer = models.TextField(null=True, blank=True)
    reward = models.FloatField(null=True, blank=True)
    correct = models.BooleanField(null=True, blank=True)
    machine_scores = models.JSONField(
        default=dict, help_text="criterion name -> {scorer, score, detail} from the rollout's rubric/<name> keys."
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
    annotator = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="annotation_assignments")
    status = models.CharField(
        max_length=16, choices=AssignmentStatus.choices, default=AssignmentStatus.PENDING, db_index=True
    )
    scores = models.JSONField(default=dict, help_text="criterion name -> score on the criterion's scale.")
    comment = models.TextField(blank=True, default="")
    updated_at = models.DateTimeField(auto_now=True)
    submitted_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ("item__task_id", "item__position", "annotator_id")
        constraints = (models.UniqueConstraint(fields=["item", "annotator"], name="one_assignment_per_annotator"),)
        indexes = (models.Index(fields=["annotator", "status"], name="assignment_annotator_status"),)

    def __str__(self) -> str:
        return f"{self.annotator} on {self.item} ({self.status})"
