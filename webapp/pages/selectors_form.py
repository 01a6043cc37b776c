"""Reads for the experiment form: the models a config of the project may name (the built-in tiny models
and the project's newest checkpoints), offered as suggestions on the model fields."""

from __future__ import annotations

from webapp.experiments.models import Checkpoint
from webapp.pages.forms_config import model_suggestions
from webapp.teams.models import Project

CHECKPOINT_SUGGESTIONS = 20


def form_models(*, project: Project) -> list[tuple[str, str]]:
    """(value, what it is) for the model fields: built-in models, then the project's newest checkpoints."""
    checkpoints = (
        Checkpoint.objects.filter(run__experiment__project=project)
        .select_related("run__experiment")
        .order_by("-created_at", "-id")[:CHECKPOINT_SUGGESTIONS]
    )
    return model_suggestions() + [
        (f"checkpoint:{c.pk}", f"run {c.run_id} of {c.run.experiment.name}, step {c.step}")
        for c in checkpoints
    ]
