"""A rubric is a project's list of criteria that score a completion; it becomes a training reward.

Each criterion has a scale (binary, 1-5 Likert, numeric range), a weight, and a scorer: a verifiable
rule, an LLM judge run through the rollout engine, or people only (annotation; excluded from the training
reward). ``rubric_to_config`` (webapp/rubrics/selectors.py) turns one into the trainer's ``rubric`` section.
"""

from __future__ import annotations

from django.conf import settings
from django.db import models

from webapp.teams.models import Project


class Aggregation(models.TextChoices):
    """How criterion scores become one reward; names match trainer/rubrics/aggregators.py's registry."""

    WEIGHTED_SUM = "weighted_sum", "Weighted sum (per-criterion normalisation)"
    RANK = "rank", "Within-group ranking (RLVR^2)"


class Scale(models.TextChoices):
    BINARY = "binary", "Binary (0 or 1)"
    LIKERT5 = "likert5", "1-5"
    RANGE = "range", "Numeric range"


class Scorer(models.TextChoices):
    RULE = "rule", "Verifiable rule"
    JUDGE = "judge", "LLM judge"
    HUMAN = "human", "People only"


class Rubric(models.Model):
    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="rubrics")
    name = models.CharField(max_length=120)
    description = models.TextField(blank=True, default="")
    aggregation = models.CharField(
        max_length=16, choices=Aggregation.choices, default=Aggregation.WEIGHTED_SUM
    )
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ("name", "id")
        constraints = (
            models.UniqueConstraint(fields=["project", "name"], name="rubric_name_unique_in_project"),
        )

    def __str__(self) -> str:
        return self.name


class Criterion(models.Model):
    rubric = models.ForeignKey(Rubric, on_delete=models.CASCADE, related_name="criteria")
    position = models.PositiveIntegerField(default=0, help_text="Order within the rubric, from 0.")
    name = models.CharField(max_length=80)
    description = models.TextField(blank=True, default="")
    scale = models.CharField(max_length=16, choices=Scale.choices, default=Scale.BINARY)
    min_value = models.FloatField(default=0.0, help_text="Lowest score; fixed to 0 (binary) or 1 (1-5).")
    max_value = models.FloatField(default=1.0, help_text="Highest score; fixed to 1 (binary) or 5 (1-5).")
    weight = models.FloatField(default=1.0)
    scorer = models.CharField(max_length=16, choices=Scorer.choices, default=Scorer.RULE)
    rule = models.JSONField(
        default=dict, blank=True, help_text='Rule scorer: {"type": ..., "params": {...}}.'
    )
    judge = models.JSONField(
        default=dict, blank=True, help_text='LLM judge: {"prompt_template": ..., "parse_pattern": ...}.'
    )

    class Meta:
        ordering = ("position", "id")
        constraints = (
            models.UniqueConstraint(fields=["rubric", "name"], name="criterion_name_unique_in_rubric"),
        )

    def __str__(self) -> str:
        return f"{self.rubric}: {self.name}"
