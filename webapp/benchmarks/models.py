"""Benchmarks (a project's evaluation sets), their evaluation runs, and what those runs produce.

A Benchmark stores its ``trainer.evaluation.config.BenchmarkConfig`` as validated JSON; an EvalRun keeps a
snapshot of it taken at launch (editing a benchmark never changes what an evaluation measured). Each
finished problem is one EvalProblem row with its samples as EvalSample rows; a sample's per-token arrays
live in one packed blob (trainer.sinks.pack_token_arrays, as rollouts), not in a row per token.
"""

from __future__ import annotations

from django.conf import settings
from django.db import models

from webapp.datafiles.models import Dataset
from webapp.experiments.models import Checkpoint, Experiment, Run
from webapp.teams.models import Project


class BenchmarkSource(models.TextChoices):
    FILE = "file", "Uploaded file"
    REASONING_GYM = "reasoning_gym", "reasoning-gym task"
    BUILTIN = "builtin", "Built-in suite"


class Benchmark(models.Model):
    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="benchmarks")
    name = models.CharField(
        max_length=120, help_text="Also the metric prefix during training: eval/<name>/..."
    )
    description = models.TextField(blank=True, default="")
    source = models.CharField(max_length=16, choices=BenchmarkSource.choices)
    dataset = models.ForeignKey(
        Dataset, null=True, blank=True, on_delete=models.PROTECT, related_name="benchmarks"
    )
    builtin = models.CharField(
        max_length=120, blank=True, default="", help_text="Suite entry, e.g. builtin:addition."
    )
    config = models.JSONField(
        help_text="A validated trainer.evaluation.config.BenchmarkConfig, every default filled in."
    )
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ("name", "id")
        constraints = (
            models.UniqueConstraint(fields=["project", "name"], name="benchmark_name_unique_in_project"),
        )

    def __str__(self) -> str:
        return self.name


class EvalStatus(models.TextChoices):
    QUEUED = "queued", "Queued"
    RUNNING = "running", "Running"
    SUCCEEDED = "succeeded", "Succeeded"
    FAILED = "failed", "Failed"
    CANCELLED = "cancelled", "Cancelled"


EVAL_FINISHED = frozenset({EvalStatus.SUCCEEDED, EvalStatus.FAILED, EvalStatus.CANCELLED})


class TargetKind(models.TextChoices):
    BASE = "base", "Base model of an experiment"
    CHECKPOINT = "checkpoint", "Checkpoint of a run"


class EvalRun(models.Model):
    """One benchmark evaluated on one model (an experiment's base model or a run's checkpoint)."""

    benchmark = models.ForeignKey(Benchmark, on_delete=models.CASCADE, related_name="eval_runs")
    target_kind = models.CharField(max_length=16, choices=TargetKind.choices)
    experiment = models.ForeignKey(
        Experiment, null=True, blank=True, on_delete=models.CASCADE, related_name="+"
    )
    run = models.ForeignKey(Run, null=True, blank=True, on_delete=models.CASCADE, related_name="eval_runs")
    checkpoint = models.ForeignKey(
        Checkpoint, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    step = models.PositiveIntegerField(null=True, blank=True, help_text="Training step of the checkpoint.")
    model_path = models.CharField(max_length=1024, help_text="What trainer.evaluation.engine.evaluate loads.")
    label = models.CharField(max_length=255, help_text="Row name in the results table.")
    config = models.JSONField(help_text="The benchmark's config as it was at launch.")
    status = models.CharField(
        max_length=16, choices=EvalStatus.choices, default=EvalStatus.QUEUED, db_index=True
    )
    problems_total = models.PositiveIntegerField(default=0)
    problems_done = models.PositiveIntegerField(default=0)
    metrics = models.JSONField(
        default=dict, blank=True, help_text="Metric name -> value, e.g. 'pass@1 (n=8)'."
    )
    ci = models.JSONField(
        default=dict, blank=True, help_text="Metric name -> [low, high] bootstrap interval."
    )
    timings = models.JSONField(default=dict, blank=True)
    error_message = models.TextField(blank=True, default="")
    traceback = models.TextField(blank=True, default="")
    cancel_requested = models.BooleanField(default=False)
    attempts = models.PositiveIntegerField(default=0)
    worker = models.CharField(max_length=255, blank=True, default="")
    celery_task_id = models.CharField(max_length=255, blank=True, default="")
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ("-created_at", "-id")

    def __str__(self) -> str:
        return f"eval {self.pk}: {self.benchmark_id} on {self.label} ({self.status})"


class EvalProblem(models.Model):
    """One problem of an evaluation at one seed, stored once all its samples are verified."""

    eval_run = models.ForeignKey(EvalRun, on_delete=models.CASCADE, related_name="problems")
    index = models.PositiveIntegerField(help_text="The problem's position in the benchmark.")
    problem_id = models.CharField(max_length=255)
    seed = models.BigIntegerField(default=0)
    prompt = models.TextField()
    answer = models.TextField(null=True, blank=True)
    n = models.PositiveIntegerField(help_text="Samples drawn.")
    c = models.PositiveIntegerField(help_text="Samples verified correct.")

    class Meta:
        ordering = ("seed", "index", "id")
        constraints = (
            models.UniqueConstraint(
                fields=["eval_run", "problem_id", "seed"], name="one_result_per_problem_seed"
            ),
        )


class EvalSample(models.Model):
    problem = models.ForeignKey(EvalProblem, on_delete=models.CASCADE, related_name="samples")
    index = models.PositiveIntegerField()
    text = models.TextField()
    finish_reason = models.CharField(max_length=32)
    length = models.PositiveIntegerField()
    reward = models.FloatField(null=True)
    correct = models.BooleanField()
    extracted_answer = models.TextField(null=True, blank=True)
    detail = models.JSONField(default=dict, help_text="Verifier key -> detail record.")
    rewards = models.JSONField(default=dict, help_text="Verifier key -> raw reward.")
    tokens = models.JSONField(default=list, help_text="The completion's token strings.")
    token_data = models.BinaryField(help_text="trainer.sinks.pack_token_arrays: ids + logprob channel.")

    class Meta:
        ordering = ("index",)
        constraints = (models.UniqueConstraint(fields=["problem", "index"], name="one_sample_per_index"),)
