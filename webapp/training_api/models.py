"""A Tinker session, its training models and every call made on them, as rows: the source of truth.

The web process answers each call with a request id at once (a row in ``TinkerRequest``, status pending); the one
worker that owns a model (workers/tasks_training_api.py) takes that model's pending calls in ``seq`` order,
writes each result back to its row and records the run's metrics, rollouts and checkpoints. A crash loses
nothing: a call not finished stays pending and is taken again by the next worker for that model.

A training model is a Run (``source: tinker``), so its losses, samples and checkpoints show on the run pages.
"""

from __future__ import annotations

from django.conf import settings
from django.db import models

from webapp.experiments.models import Run
from webapp.teams.models import Project


class TinkerSession(models.Model):
    """One ``ServiceClient`` of the SDK: who opened it, in which project; its heartbeat says it is alive."""

    id = models.CharField(primary_key=True, max_length=64)
    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="+")
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+")
    display_name = models.CharField(max_length=200, blank=True, default="")
    sdk_version = models.CharField(max_length=40, blank=True, default="")
    created_at = models.DateTimeField(auto_now_add=True)
    last_heartbeat_at = models.DateTimeField(auto_now_add=True)
    finish_status = models.CharField(
        max_length=12,
        blank=True,
        default="",
        help_text="How ServiceClient.close() said it ended (first wins).",
    )


class ModelKind(models.TextChoices):
    TRAINING = "training", "Training client"
    SAMPLER = "sampler", "Sampling client of a base model"


class TinkerModel(models.Model):
    """One training client: a model the worker holds (base model plus optional LoRA), recorded as ``run``.

    A sampling client of a bare base model is a model too (``kind`` sampler): the same one-worker-per-model rule
    serves it (its calls in order, let go when idle), and its run shows the samples drawn. A training client
    made by ``create_training_client_from_state`` starts from ``source_state`` (a saved state's folder)."""

    id = models.CharField(primary_key=True, max_length=80)
    session = models.ForeignKey(TinkerSession, on_delete=models.CASCADE, related_name="models")
    run = models.OneToOneField(Run, on_delete=models.CASCADE, related_name="tinker_model")
    kind = models.CharField(max_length=10, choices=ModelKind.choices, default=ModelKind.TRAINING)
    source_state = models.CharField(
        max_length=1024, blank=True, default="", help_text="The saved state this training model started from."
    )
    source_optimizer = models.BooleanField(
        default=False, help_text="Whether it started with that state's optimizer moments too."
    )
    base_model = models.CharField(max_length=1024)
    lora_rank = models.PositiveIntegerField(null=True, blank=True)
    seed = models.BigIntegerField(default=0)
    next_seq = models.PositiveBigIntegerField(default=1, help_text="The seq of the next call queued.")
    tokenizer_dir = models.CharField(max_length=1024, blank=True, default="")
    vocab_size = models.PositiveIntegerField(default=0)
    state_dir = models.CharField(
        max_length=1024,
        blank=True,
        default="",
        help_text="Where the worker saved the model when it last let go.",
    )
    pending_metrics = models.JSONField(
        default=dict, blank=True, help_text="forward_backward metrics since the last optim_step."
    )
    sampled_groups = models.PositiveIntegerField(
        default=0, help_text="Rollout groups stored at the run's current step (the next group's index)."
    )
    dispatched_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)


class RequestStatus(models.TextChoices):
    PENDING = "pending", "Pending"
    DONE = "done", "Done"
    FAILED = "failed", "Failed"


class TinkerRequest(models.Model):
    """One call on a model (create_model, forward_backward, optim_step, sample, save/load): its future."""

    id = models.CharField(primary_key=True, max_length=64)
    model = models.ForeignKey(TinkerModel, on_delete=models.CASCADE, related_name="requests")
    seq = models.PositiveBigIntegerField()
    kind = models.CharField(max_length=40)
    payload = models.JSONField(default=dict, blank=True)
    status = models.CharField(max_length=10, choices=RequestStatus.choices, default=RequestStatus.PENDING)
    result = models.JSONField(null=True, blank=True, help_text="A JSON result.")
    result_proto = models.BinaryField(null=True, blank=True, help_text="A protobuf result (SDK-defined).")
    error = models.TextField(blank=True, default="")
    error_category = models.CharField(max_length=10, blank=True, default="")
    created_at = models.DateTimeField(auto_now_add=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        constraints = (models.UniqueConstraint(fields=["model", "seq"], name="one_tinker_call_per_seq"),)
        indexes = (models.Index(fields=["model", "status", "seq"], name="tinker_pending_calls"),)


class TinkerSamplingSession(models.Model):
    """A sampling client: the weights it samples (a saved sampler checkpoint of a model)."""

    id = models.CharField(primary_key=True, max_length=80)
    model = models.ForeignKey(TinkerModel, on_delete=models.CASCADE, related_name="sampling_sessions")
    weights_path = models.CharField(max_length=1024, blank=True, default="")
    created_at = models.DateTimeField(auto_now_add=True)


class TinkerCheckpoint(models.Model):
    """A named checkpoint (``tinker://<model>/<kind>/<name>``) and the folder that holds it."""

    model = models.ForeignKey(TinkerModel, on_delete=models.CASCADE, related_name="checkpoints")
    kind = models.CharField(max_length=20)  # "weights" (save_state) | "sampler_weights"
    name = models.CharField(max_length=200)
    directory = models.CharField(max_length=1024)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = (
            models.UniqueConstraint(fields=["model", "kind", "name"], name="one_tinker_checkpoint"),
        )
