"""Verifier definitions of a project, their immutable versions, and the test cases every version must pass.

A definition is a named slot ("GSM8K answer check"); each edit creates a new ``VerifierVersion`` holding a
trainer registry name and its parameters, validated and with every default filled in by the trainer's own
pydantic schema (``trainer.verifiers.build_verifier``). Versions are never changed afterwards (only their
test status is recomputed when the definition's test cases change), so a run that records a version id
records exactly what scored it.
"""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.db import models

from webapp.teams.models import Project

# The only fields of an existing version that may be saved again: everything else is its identity.
MUTABLE_VERSION_FIELDS = frozenset({"test_status", "test_results"})


class VerifierDefinition(models.Model):
    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="verifier_definitions")
    name = models.CharField(max_length=120)
    description = models.TextField(blank=True, default="")
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ("name", "id")
        constraints = (
            models.UniqueConstraint(fields=["project", "name"], name="verifier_name_unique_in_project"),
        )

    def __str__(self) -> str:
        return self.name


class TestStatus(models.TextChoices):
    __test__ = False  # not a pytest test class, despite the name
    PASSING = "passing", "Passing"
    FAILING = "failing", "Failing"
    NO_CASES = "no_cases", "No test cases"


class VerifierVersion(models.Model):
    definition = models.ForeignKey(VerifierDefinition, on_delete=models.CASCADE, related_name="versions")
    number = models.PositiveIntegerField(help_text="1, 2, 3, ... within the definition.")
    verifier = models.CharField(
        max_length=64, help_text="Trainer verifier registry name (math, exact, code, ...)."
    )
    params = models.JSONField(
        default=dict, help_text="The verifier's parameters, validated, with every default filled in."
    )
    note = models.CharField(max_length=300, blank=True, default="", help_text="What changed in this version.")
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    test_status = models.CharField(max_length=16, choices=TestStatus.choices, default=TestStatus.NO_CASES)
    test_results = models.JSONField(
        default=list,
        blank=True,
        help_text="One entry per test case of the last check: case id, verdict, pass.",
    )

    class Meta:
        ordering = ("definition_id", "-number")
        constraints = (
            models.UniqueConstraint(
                fields=["definition", "number"], name="one_version_number_per_definition"
            ),
        )

    def __str__(self) -> str:
        return f"{self.definition.name} v{self.number}"

    def save(self, *args: Any, **kwargs: Any) -> None:
        update_fields = kwargs.get("update_fields")
        if self.pk is not None and (
            update_fields is None or not set(update_fields) <= MUTABLE_VERSION_FIELDS
        ):
            raise ValueError(
                "a verifier version is immutable: create a new version (verifier_version_create) instead"
            )
        super().save(*args, **kwargs)

    @property
    def config_entry(self) -> dict[str, Any]:
        """The experiment config's ``verifiers`` entry that scores with exactly this version."""
        return {"name": self.verifier, "params": self.params, "label": config_label(self.definition.name)}


class VerifierTestCase(models.Model):
    """A saved input for the test bench: a completion, its reference and the verdict it must get."""

    definition = models.ForeignKey(VerifierDefinition, on_delete=models.CASCADE, related_name="test_cases")
    name = models.CharField(max_length=200, blank=True, default="")
    completion = models.TextField()
    reference = models.TextField(
        null=True, blank=True, help_text="Reference answer; null for label-free verifiers."
    )
    expected_correct = models.BooleanField(help_text="The verdict it must get: accepted (true) or rejected.")
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ("id",)

    def __str__(self) -> str:
        return self.name or f"case {self.pk}"


def config_label(name: str) -> str:
    """A metric-safe label from a definition name: 'GSM8K answer' -> 'gsm8k_answer' (reward/<label>_mean)."""
    cleaned = "".join(c if c.isalnum() else "_" for c in name.strip().lower())
    return "_".join(part for part in cleaned.split("_") if part)[:60] or "verifier"


class JobKind(models.TextChoices):
    AUDIT = "audit", "Metamorphic audit"
    RESCORE = "rescore", "Rescore of a run's rollouts"


class JobStatus(models.TextChoices):
    QUEUED = "queued", "Queued"
    RUNNING = "running", "Running"
    SUCCEEDED = "succeeded", "Succeeded"
    FAILED = "failed", "Failed"
    CANCELLED = "cancelled", "Cancelled"


JOB_FINISHED = frozenset({JobStatus.SUCCEEDED, JobStatus.FAILED, JobStatus.CANCELLED})


class VerificationJob(models.Model):
    """An audit or a rescore of one version, run by a Celery worker (workers/tasks_verification.py).

    Both take longer than a web request should (a math audit 10-20 s; a rescore of a whole run minutes),
    so the page starts a job and polls it; the outcome stays here when the page is closed. ``done`` /
    ``total`` count rollouts (rescore, saved after each chunk) or audit variants (set when it finishes).
    """

    kind = models.CharField(max_length=16, choices=JobKind.choices)
    version = models.ForeignKey(VerifierVersion, on_delete=models.CASCADE, related_name="jobs")
    run = models.ForeignKey(
        "experiments.Run", null=True, blank=True, on_delete=models.CASCADE, related_name="+",
        help_text="The run whose rollouts a rescore scores; null for an audit.",
    )  # fmt: skip
    limit = models.PositiveIntegerField(
        null=True, blank=True, help_text="Rescore only the newest this many rollouts; null: all of them."
    )
    status = models.CharField(
        max_length=16, choices=JobStatus.choices, default=JobStatus.QUEUED, db_index=True
    )
    done = models.PositiveIntegerField(default=0)
    total = models.PositiveIntegerField(default=0)
    result = models.JSONField(default=dict, blank=True, help_text="The audit report or the rescore summary.")
    error = models.TextField(blank=True, default="")
    cancel_requested = models.BooleanField(default=False, help_text="Stop at the next chunk boundary.")
    attempts = models.PositiveIntegerField(
        default=0, help_text="Deliveries that started it (a dead worker's job restarts)."
    )
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ("-created_at", "-id")
        indexes = (models.Index(fields=["version", "kind", "-id"], name="verification_job_latest"),)

    def __str__(self) -> str:
        return f"{self.kind} job {self.pk} of version {self.version_id} ({self.status})"

    @property
    def finished(self) -> bool:
        return self.status in JOB_FINISHED

    @property
    def cancellable(self) -> bool:
        """Queued or running and not already asked to stop: what the page's Cancel button is shown for."""
        return not self.finished and not self.cancel_requested
