"""Experiments, their runs, and everything a run produces (metrics, rollouts, checkpoints, events).

A Run keeps a snapshot of its experiment's config taken at launch: editing the experiment later never
changes what a run trained with. Per-token arrays of a rollout live in one packed blob
(trainer.sinks.pack_token_arrays, ~24 bytes per token), not in a row per token.
"""

from __future__ import annotations

from django.conf import settings
from django.db import models

from webapp.teams.models import Project


class Experiment(models.Model):
    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="experiments")
    name = models.CharField(max_length=200)
    description = models.TextField(blank=True, default="")
    config = models.JSONField(
        help_text="A validated trainer.config.ExperimentConfig, with every default filled in."
    )
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ("-created_at", "-id")
        constraints = (
            models.UniqueConstraint(fields=["project", "name"], name="experiment_name_unique_in_project"),
        )

    def __str__(self) -> str:
        return self.name


class RunStatus(models.TextChoices):
    QUEUED = "queued", "Queued"
    NOT_QUEUED = "not_queued", "Not queued"  # saved, but the task queue refused it: queue it again
    RUNNING = "running", "Running"
    SUCCEEDED = "succeeded", "Succeeded"
    FAILED = "failed", "Failed"
    CANCELLED = "cancelled", "Cancelled"


FINISHED_STATUSES = frozenset({RunStatus.SUCCEEDED, RunStatus.FAILED, RunStatus.CANCELLED})


class RunSource(models.TextChoices):
    """Who trained the run: this platform's own trainer on a Celery worker, or an outside trainer that
    reports through the ingest API (webapp/ingest) and its client (rlvr_client/)."""

    NATIVE = "native", "RLVR Studio trainer"
    TRL = "trl", "TRL"
    VERL = "verl", "verl"
    SCRIPT = "script", "Script (ingest client)"
    IMPORT = "import", "Imported file"
    TINKER = "tinker", "Tinker API"  # a Tinker-style client on this server's workers (webapp/training_api)


EXTERNAL_SOURCES = frozenset(set(RunSource) - {RunSource.NATIVE})


class Run(models.Model):
    experiment = models.ForeignKey(Experiment, on_delete=models.CASCADE, related_name="runs")
    status = models.CharField(
        max_length=16, choices=RunStatus.choices, default=RunStatus.QUEUED, db_index=True
    )
    config = models.JSONField(help_text="The experiment's config as it was at launch.")
    step = models.PositiveIntegerField(default=0, help_text="The last step whose results are stored.")
    max_steps = models.PositiveIntegerField(default=0)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    worker = models.CharField(
        max_length=255, blank=True, default="", help_text="Hostname of the last worker."
    )
    error_message = models.TextField(blank=True, default="")
    traceback = models.TextField(blank=True, default="", help_text="The last lines of the traceback.")
    resume_from = models.CharField(max_length=1024, blank=True, default="", help_text="Checkpoint path.")
    output_dir = models.CharField(max_length=1024, blank=True, default="")
    cancel_requested = models.BooleanField(default=False)
    attempts = models.PositiveIntegerField(default=0)
    node_round = models.PositiveIntegerField(
        default=0,
        help_text="training.num_nodes > 1: which sending of the run's node tasks is current (each launch or "
        "resume sends one task per node; a task of an earlier round is dropped).",
    )
    celery_task_id = models.CharField(max_length=255, blank=True, default="")
    final_metrics = models.JSONField(default=dict, blank=True)
    phase = models.CharField(
        max_length=64,
        blank=True,
        default="",
        help_text="What the run is doing before its first step (e.g. building_model); blank otherwise.",
    )
    phase_progress = models.JSONField(
        default=dict,
        blank=True,
        help_text="The phase's latest report: label, done, total, elapsed_s, eta_s, updated_at (ISO time).",
    )
    source = models.CharField(
        max_length=16,
        choices=RunSource.choices,
        default=RunSource.NATIVE,
        db_index=True,
        help_text="Who trained the run: the built-in trainer, or an outside trainer through the ingest API.",
    )
    source_info = models.JSONField(
        default=dict,
        blank=True,
        help_text="For outside runs: the library and its version, host, command, client version.",
    )
    external_key = models.CharField(
        max_length=128,
        blank=True,
        default="",
        help_text="The ingest client's key for the run: starting a run with the same key again returns it.",
    )
    retention = models.JSONField(
        default=dict,
        blank=True,
        help_text="Which steps keep their rollouts (webapp/experiments/retention.py); empty keeps every rollout.",
    )
    rollouts_dropped = models.PositiveIntegerField(
        default=0,
        help_text="For outside runs: rollouts the ingest client could not deliver (the server refused them; the "
        "client keeps them in its spool's rejected/ folder). Shown with the status: never a silent success.",
    )
    verifier_versions = models.ManyToManyField(
        "verification.VerifierVersion",
        blank=True,
        related_name="runs",
        help_text="The saved verifier versions whose exact verifier and params the run's config uses.",
    )

    class Meta:
        ordering = ("-created_at", "-id")
        constraints = (
            models.UniqueConstraint(
                fields=["experiment", "external_key"],
                condition=~models.Q(external_key=""),
                name="one_run_per_external_key",
            ),
        )

    @property
    def is_external(self) -> bool:
        return self.source != RunSource.NATIVE

    def __str__(self) -> str:
        return f"run {self.pk} of {self.experiment_id} ({self.status})"

    @property
    def layout_text(self) -> str:
        """Where the run trains, for lists of runs: "1 process", "2 processes", "2 nodes x 1 process"."""
        training = (self.config or {}).get("training") or {}
        nodes, procs = int(training.get("num_nodes") or 1), int(training.get("num_processes") or 1)
        per = f"{procs} process" + ("es" if procs != 1 else "")
        return per if nodes == 1 else f"{nodes} nodes \u00d7 {per}"

    @property
    def phase_text(self) -> str:
        """A few words for lists of runs: "building model" while a phase runs, else blank."""
        return self.phase.replace("_", " ")


class MetricPoint(models.Model):
    """One metric value at one step. ``value`` is null where the trainer reported NaN or infinity."""

    run = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="metric_points")
    step = models.PositiveIntegerField()
    key = models.CharField(max_length=200)
    value = models.FloatField(null=True)

    class Meta:
        indexes = (models.Index(fields=["run", "key", "step"], name="metric_run_key_step"),)
        constraints = (
            models.UniqueConstraint(fields=["run", "step", "key"], name="one_metric_value_per_step"),
        )


class StoredMetricSummary(models.Model):
    """A finished run's figures for one key (webapp/experiments/metric_summaries.py), kept so ranking a
    project's runs reads one row per run and key instead of every point. Valid while the run is finished at
    ``run_step``; a run that resumes moves its step, and a metric sent in after the end deletes the run's rows.
    ``points == 0`` records that the run has no value for the key (the floats are then null)."""

    run = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="+")
    key = models.CharField(max_length=200)
    window = models.PositiveSmallIntegerField()
    run_step = models.PositiveIntegerField()
    points = models.PositiveIntegerField()
    last_step = models.PositiveIntegerField(null=True)
    last = models.FloatField(null=True)
    max = models.FloatField(null=True)
    min = models.FloatField(null=True)
    smooth_last = models.FloatField(null=True)
    smooth_max = models.FloatField(null=True)
    smooth_min = models.FloatField(null=True)

    class Meta:
        constraints = (
            models.UniqueConstraint(fields=["run", "key", "window"], name="one_stored_summary_per_run_key"),
        )


class Rollout(models.Model):
    """One completion of one step (trainer.sinks.RolloutRecord)."""

    run = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="rollouts")
    step = models.PositiveIntegerField()
    prompt_id = models.CharField(max_length=255)
    group = models.PositiveIntegerField()
    sample_index = models.PositiveIntegerField()
    prompt = models.TextField()
    completion = models.TextField()
    answer = models.TextField(null=True, blank=True, help_text="Reference answer; null for label-free data.")
    finish_reason = models.CharField(max_length=32)
    reward = models.FloatField(null=True)
    rewards = models.JSONField(default=dict, help_text="Raw reward per verifier key.")
    correct = models.BooleanField(null=True, help_text="Null where the trainer did not say (an outside run).")
    details = models.JSONField(default=dict, help_text="Verifier key -> detail record.")
    advantage = models.FloatField(null=True)
    length = models.PositiveIntegerField(help_text="Completion length in tokens.")
    tokens = models.JSONField(
        default=list,
        blank=True,
        help_text="The completion's token strings (rollouts stored before the token store; empty since).",
    )
    token_data = models.BinaryField(
        default=b"",
        blank=True,
        help_text="trainer.sinks.pack_token_arrays (rollouts stored before the token store; empty since).",
    )
    token_key = models.CharField(
        max_length=255,
        blank=True,
        default="",
        help_text="Where the per-token arrays live in the token store (webapp/experiments/token_store.py).",
    )
    token_offset = models.BigIntegerField(
        default=0, help_text="Byte offset of this rollout's arrays in token_key."
    )
    token_size = models.PositiveIntegerField(
        default=0, help_text="Byte length of this rollout's arrays in token_key."
    )

    class Meta:
        indexes = (models.Index(fields=["run", "step"], name="rollout_run_step"),)
        constraints = (
            models.UniqueConstraint(
                fields=["run", "step", "group", "sample_index"], name="one_rollout_per_slot"
            ),
        )
        ordering = ("step", "group", "sample_index")


class Checkpoint(models.Model):
    run = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="checkpoints")
    step = models.PositiveIntegerField()
    path = models.CharField(max_length=1024)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ("step",)
        constraints = (models.UniqueConstraint(fields=["run", "step"], name="one_checkpoint_per_step"),)


class EventLevel(models.TextChoices):
    INFO = "info", "Info"
    WARNING = "warning", "Warning"
    ERROR = "error", "Error"


class RunEvent(models.Model):
    """A line of a run's log: status changes, checkpoints, worker loss, errors."""

    run = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="events")
    created_at = models.DateTimeField(auto_now_add=True)
    level = models.CharField(max_length=16, choices=EventLevel.choices, default=EventLevel.INFO)
    kind = models.CharField(max_length=64)
    message = models.TextField()
    step = models.PositiveIntegerField(null=True, blank=True)

    class Meta:
        ordering = ("id",)
        indexes = (models.Index(fields=["run", "id"], name="run_event_run_id"),)


class NodeState(models.TextChoices):
    JOINING = "joining", "Joining"
    TRAINING = "training", "Training"
    FINISHED = "finished", "Finished"
    FAILED = "failed", "Failed"


class RunNode(models.Model):
    """One host's part in a run over ``training.num_nodes`` hosts, per round of node tasks: who it is, the
    rendezvous it hosts or joins, and its last log lines (every node's logs reachable from the run page)."""

    run = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="nodes")
    round = models.PositiveIntegerField()
    index = models.PositiveSmallIntegerField(
        help_text="Which of the round's node tasks (0 .. num_nodes - 1)."
    )
    name = models.CharField(max_length=255, help_text="The Celery worker that took the node task.")
    address = models.CharField(
        max_length=255, help_text="The address the worker advertised (RLVR_NODE_ADDRESS)."
    )
    is_host = models.BooleanField(
        default=False, help_text="It hosts the c10d rendezvous (the first to start)."
    )
    endpoint = models.CharField(
        max_length=300, blank=True, default="", help_text="host:port of the rendezvous."
    )
    resume_from = models.CharField(
        max_length=1024,
        blank=True,
        default="",
        help_text="Host only: the checkpoint every node resumes from.",
    )
    ready = models.BooleanField(
        default=False,
        help_text="Host only: the start is planned (resume point decided); the others may join.",
    )
    state = models.CharField(max_length=16, choices=NodeState.choices, default=NodeState.JOINING)
    message = models.TextField(blank=True, default="")
    log_tail = models.TextField(
        blank=True, default="", help_text="The node's last torchrun and rank log lines."
    )
    started_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ("round", "index")
        constraints = (
            models.UniqueConstraint(fields=["run", "round", "index"], name="one_node_row_per_task"),
            models.UniqueConstraint(
                fields=["run", "round"],
                condition=models.Q(is_host=True),
                name="one_rendezvous_host_per_round",
            ),
        )

    def __str__(self) -> str:
        return f"node {self.index} of run {self.run_id} round {self.round} ({self.name})"
