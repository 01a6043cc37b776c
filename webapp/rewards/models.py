"""Reward models and judges of a project as named, immutable versions; the project's secrets; and the background jobs
that train a reward model or evaluate reward sources.

A ``RewardModel`` is a named slot ("chain RM", "gpt judge"); each version is one reward source an experiment config
lists under ``verifiers`` with a weight, exactly as a saved verifier version is: ``config_entry`` is that entry.
Versions are never changed afterwards (only their ``metrics`` may be added to), so a run that names ``rm:<id>`` names
exactly what scored it. Scalar versions hold a sequence-classification checkpoint folder on the server (written by a
training job, or a folder under RLVR_MODEL_ROOTS); judge versions hold the endpoint and its parse rule, with the API
key kept apart as a ``ProjectSecret`` (encrypted at rest, never returned). Process reward model (PRM) versions hold a
token-classification or causal-LM checkpoint folder scored at every step's end (Lightman et al. 2023, "Let's Verify
Step by Step"); a config uses one as its ``process_reward`` section's ``prm`` scorer, not as a ``verifiers`` entry, so
their ``config_entry`` is that section's snippet.
"""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.db import models

from webapp.teams.models import Project
from webapp.verification.models import config_label

# The only fields of an existing version that may be saved again: everything else is its identity.
MUTABLE_VERSION_FIELDS = frozenset({"metrics"})
RM_PREFIX = "rm:"  # a config's reference to a reward-model version: rm:<version id>
PRM_SCORER = "prm"  # trainer/process/prm_head.py's step scorer name (STEP_SCORERS)


class RewardModel(models.Model):
    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="reward_models")
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
            models.UniqueConstraint(fields=["project", "name"], name="reward_model_name_unique_in_project"),
        )

    def __str__(self) -> str:
        return self.name


class SourceKind(models.TextChoices):
    SCALAR = "scalar", "Scalar reward model"  # trainer verifier 'reward_model'
    JUDGE = "judge", "Judge behind an OpenAI-compatible endpoint"  # trainer verifier 'judge'
    PRM = "prm", "Process reward model"  # trainer step scorer 'prm' (process_reward.scorer)


class Origin(models.TextChoices):
    TRAINED = "trained", "Trained here"
    FOLDER = "folder", "A folder on the server"
    ENDPOINT = "endpoint", "An endpoint"


class RewardModelVersion(models.Model):
    reward_model = models.ForeignKey(RewardModel, on_delete=models.CASCADE, related_name="versions")
    number = models.PositiveIntegerField(help_text="1, 2, 3, ... within the reward model.")
    kind = models.CharField(max_length=16, choices=SourceKind.choices)
    origin = models.CharField(max_length=16, choices=Origin.choices)
    params = models.JSONField(
        default=dict,
        help_text="The trainer reward source's parameters, validated, with every default filled in. For a scalar "
        "version 'model' is the stored reference (rm:<id> is resolved to `folder` on the worker); never a secret.",
    )
    folder = models.CharField(
        max_length=1000,
        blank=True,
        default="",
        help_text="Scalar and PRM versions: the checkpoint folder on the server (under RLVR_HOME/reward-models or a "
        "model root).",
    )
    training_job = models.ForeignKey(
        "RewardJob", null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    metrics = models.JSONField(
        default=dict,
        blank=True,
        help_text="Held-out pairwise accuracy and other figures, added after creation.",
    )
    note = models.CharField(max_length=300, blank=True, default="", help_text="What changed in this version.")
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ("reward_model_id", "-number")
        constraints = (
            models.UniqueConstraint(
                fields=["reward_model", "number"], name="one_version_number_per_reward_model"
            ),
        )

    def __str__(self) -> str:
        return f"{self.reward_model.name} v{self.number}"

    def save(self, *args: Any, **kwargs: Any) -> None:
        update_fields = kwargs.get("update_fields")
        if self.pk is not None and (
            update_fields is None or not set(update_fields) <= MUTABLE_VERSION_FIELDS
        ):
            raise ValueError("a reward model version is immutable: create a new version instead")
        super().save(*args, **kwargs)

    @property
    def trainer_name(self) -> str:
        """The trainer registry name of this source: the verifier 'reward_model' or 'judge', or the step scorer
        'prm' (trainer/process/scorers.py)."""
        if self.kind == SourceKind.SCALAR:
            return "reward_model"
        return PRM_SCORER if self.kind == SourceKind.PRM else "judge"

    @property
    def is_process(self) -> bool:
        """A PRM: a config's ``process_reward`` scorer, never a ``verifiers`` entry."""
        return self.kind == SourceKind.PRM

    @property
    def reference_params(self) -> dict[str, Any]:
        """The source's params as a config names them: a scalar or PRM version's ``model`` is its ``rm:<id>``."""
        params = dict(self.params)
        if self.kind in (SourceKind.SCALAR, SourceKind.PRM):
            params["model"] = f"{RM_PREFIX}{self.pk}"
        return params

    @property
    def scorer_entry(self) -> dict[str, Any]:
        """A PRM version as the ``process_reward.scorer`` choice ``{name: prm, params}`` (other kinds: their
        verifiers entry without its label)."""
        return {"name": self.trainer_name, "params": self.reference_params}

    @property
    def config_entry(self) -> dict[str, Any]:
        """What a config names to score with exactly this version: the ``verifiers`` entry of a scalar or judge
        version; for a PRM, the ``process_reward`` snippet whose scorer is this version (merge it into the config's
        section; segmenter and credit keep their own settings)."""
        if self.is_process:
            return {"process_reward": {"scorer": self.scorer_entry}}
        return {
            "name": self.trainer_name, "params": self.reference_params, "label": config_label(self.reward_model.name),
        }  # fmt: skip


class ProjectSecret(models.Model):
    """A named secret of a project (an API key): encrypted at rest, write-only in the API and the pages."""

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="secrets")
    name = models.CharField(
        max_length=64, help_text="Letters, digits and _; what a config's api_key_secret names."
    )
    ciphertext = models.BinaryField(help_text="Fernet token of the value (webapp/rewards/secrets.py).")
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+"
    )
    updated_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ("name",)
        constraints = (
            models.UniqueConstraint(fields=["project", "name"], name="secret_name_unique_in_project"),
        )

    def __str__(self) -> str:
        return f"secret {self.name} of project {self.project_id}"  # never the value

    def __repr__(self) -> str:
        return f"<ProjectSecret {self.name!r} project={self.project_id}>"


class JobKind(models.TextChoices):
    TRAIN = "train", "Train a reward model"
    EVALUATE = "evaluate", "Evaluate reward sources"


class JobStatus(models.TextChoices):
    QUEUED = "queued", "Queued"
    RUNNING = "running", "Running"
    SUCCEEDED = "succeeded", "Succeeded"
    FAILED = "failed", "Failed"
    CANCELLED = "cancelled", "Cancelled"


class RewardJob(models.Model):
    """A background job on a worker: training a reward model (Bradley-Terry) or evaluating reward sources.

    ``config`` is what was asked (validated by the trainer's own schema for that kind); ``progress`` is updated while
    it runs (phase, done, total, and the live series: loss and held-out accuracy per step for training); ``result`` is
    the final figures; a finished training job points at the version it created (``output_version``).
    """

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="reward_jobs")
    kind = models.CharField(max_length=16, choices=JobKind.choices)
    reward_model = models.ForeignKey(
        RewardModel,
        null=True,
        blank=True,
        on_delete=models.CASCADE,
        related_name="jobs",
        help_text="Training: the reward model that receives the new version.",
    )
    name = models.CharField(max_length=200, blank=True, default="")
    config = models.JSONField(default=dict)
    status = models.CharField(max_length=16, choices=JobStatus.choices, default=JobStatus.QUEUED)
    progress = models.JSONField(default=dict, blank=True)
    result = models.JSONField(default=dict, blank=True)
    error = models.TextField(blank=True, default="")
    cancel_requested = models.BooleanField(default=False)
    attempts = models.PositiveIntegerField(default=0)
    output_version = models.ForeignKey(
        RewardModelVersion, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ("-id",)
        indexes = (models.Index(fields=["project", "kind", "-id"], name="reward_job_latest"),)

    def __str__(self) -> str:
        return f"{self.kind} job {self.pk} ({self.status})"
