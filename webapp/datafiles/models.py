from __future__ import annotations

from django.conf import settings
from django.db import models

from webapp.teams.models import Project


class Dataset(models.Model):
    """A prompt data file stored under ``$RLVR_DATA_DIR/datasets/<project id>/``, already validated."""

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="datasets")
    name = models.CharField(max_length=200)
    path = models.CharField(
        max_length=1024, help_text="Absolute path of the stored file."
    )  # never sent to clients
    format = models.CharField(max_length=16)
    rows = models.PositiveIntegerField()
    fields = models.JSONField(default=list, help_text="Column names, in file order.")
    prompt_field = models.CharField(max_length=200)
    answer_field = models.CharField(max_length=200, blank=True, default="", help_text="Blank: label-free.")
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ("-created_at", "-id")
        constraints = (
            models.UniqueConstraint(fields=["project", "name"], name="dataset_name_unique_in_project"),
        )

    def __str__(self) -> str:
        return self.name


def dataset_reference(dataset: Dataset) -> str:
    """How a config names the dataset (``data.path: dataset:<id>``, webapp/core/paths.py's DATASET_PREFIX)."""
    return f"dataset:{dataset.pk}"
