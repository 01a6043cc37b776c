"""Input and output shapes of the experiments API (views live in api_*.py)."""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from trainer.sinks import TOKEN_CHANNELS
from webapp.api.fields import StrictJSONField
from webapp.core.queues import QueuePositionOut
from webapp.experiments.models import Checkpoint, Experiment, Rollout, Run, RunEvent, RunStatus
from webapp.experiments.selectors import (
    MAX_METRIC_POINTS,
    RolloutWithTokens,
    checkpoint_has_files,
    run_phase_payload,
    run_queue_position,
)

# --- experiments -----------------------------------------------------------------------------------


class ExperimentOut(serializers.ModelSerializer[Experiment]):
    created_by = serializers.CharField(source="created_by.username", default=None, read_only=True)

    class Meta:
        model = Experiment
        fields = ("id", "project", "name", "description", "config", "created_by", "created_at", "updated_at")


NAME_HELP = "At most 200 characters, unique in the project; also the config's (and its runs') name."
DESCRIPTION_HELP = "At most 10,000 characters."
CONFIG_HELP = "An experiment config; see GET /api/config-schema/. Its name is set to the experiment's."


# The bounds (name length, blank names, description length) are checked by the service, with the config, so one
# answer lists every problem of the request (webapp/experiments/config_validation.py).
class ExperimentIn(serializers.Serializer[None]):
    name = serializers.CharField(allow_blank=True, help_text=NAME_HELP)
    description = serializers.CharField(
        required=False, allow_blank=True, default="", help_text=DESCRIPTION_HELP
    )
    config = StrictJSONField(help_text=CONFIG_HELP)


class ExperimentUpdateIn(serializers.Serializer[None]):
    name = serializers.CharField(required=False, allow_blank=True, help_text=NAME_HELP)
    description = serializers.CharField(required=False, allow_blank=True, help_text=DESCRIPTION_HELP)
    config = StrictJSONField(required=False, help_text=CONFIG_HELP)


# --- runs --------------------------------------------------------------------------------------------


class RunPhaseOut(serializers.Serializer[None]):
    """What a run does before its first step, e.g. building the built-in model (trainer.sinks.PhaseReport)."""

    name = serializers.CharField(help_text="Stable name, e.g. building_model.")
    # The metaclass moves declared fields off the class, so this does not shadow Field.label at run time.
    label = serializers.CharField(
        help_text="For people, e.g. 'Building the built-in model tiny:addition (...)'."
    )  # type: ignore[assignment]
    subject = serializers.CharField(help_text="What it works on, e.g. the model name.")
    done = serializers.IntegerField()
    total = serializers.IntegerField()
    elapsed_s = serializers.FloatField(allow_null=True)
    eta_s = serializers.FloatField(
        allow_null=True, help_text="Seconds left at updated_at; null before the rate is known."
    )
    updated_at = serializers.DateTimeField()


class RunOut(serializers.ModelSerializer[Run]):
    experiment_name = serializers.CharField(source="experiment.name", read_only=True)
    project = serializers.IntegerField(source="experiment.project_id", read_only=True)
    created_by = serializers.CharField(source="created_by.username", default=None, read_only=True)
    phase = serializers.SerializerMethodField(
        help_text="Before the first step (model build): how far; else null."
    )

    class Meta:
        model = Run
        fields: tuple[str, ...] = (
            "id", "experiment", "experiment_name", "project", "status", "step", "max_steps",
            "created_by", "created_at", "started_at", "finished_at", "worker", "error_message",
            "resume_from", "output_dir", "cancel_requested", "attempts", "final_metrics", "phase", "retention",
            "rollouts_dropped",
        )  # fmt: skip

    @extend_schema_field(RunPhaseOut(allow_null=True))
    def get_phase(self, run: Run) -> dict[str, Any] | None:
        return run_phase_payload(run=run)


class RunDetailOut(RunOut):
    queue_position = serializers.SerializerMethodField(
        help_text="While queued: what is ahead of it; else null."
    )

    class Meta(RunOut.Meta):
        fields = (*RunOut.Meta.fields, "config", "traceback", "celery_task_id", "queue_position")

    @extend_schema_field(QueuePositionOut(allow_null=True))
    def get_queue_position(self, run: Run) -> dict[str, Any] | None:
        position = run_queue_position(run=run)
        return None if position is None else dict(QueuePositionOut(position).data)


RETENTION_HELP = (
    'Which rollouts the run keeps: {"keep": "all"}, {"keep": "every_n_steps", "every_n_steps": N, '
    '"recent_steps": R} or {"keep": "sample_per_step", "sample_per_step": K, "recent_steps": R}; '
    "annotated and rescored rollouts are always kept (docs/rollout_storage.md)."
)


class RunLaunchIn(serializers.Serializer[None]):
    experiment = serializers.IntegerField(help_text="Id of the experiment to launch.")
    retention = StrictJSONField(
        required=False, help_text=RETENTION_HELP + " Default: the server's RLVR_ROLLOUT_RETENTION."
    )


class RunRetentionIn(serializers.Serializer[None]):
    """The body of PATCH /api/runs/<id>/retention/: the new policy."""

    retention = StrictJSONField(help_text=RETENTION_HELP)


class RunRetentionOut(serializers.Serializer[None]):
    retention = StrictJSONField(help_text="The policy as stored, with its defaults filled in.")
    description = serializers.CharField(help_text="The policy in words, as the run page shows it.")
    deleted_rollouts = serializers.IntegerField(help_text="Rollouts the new policy deleted at once.")


class RunListFilterIn(serializers.Serializer[None]):
    status = serializers.ChoiceField(choices=RunStatus.choices, required=False)
    experiment = serializers.IntegerField(required=False)


# --- what a run produced -----------------------------------------------------------------------------


class MetricsFilterIn(serializers.Serializer[None]):
    keys = serializers.CharField(required=False, help_text="Comma-separated metric keys; default: all.")
    since_step = serializers.IntegerField(required=False, min_value=0, help_text="Only steps after this one.")
    max_points = serializers.IntegerField(
        required=False, min_value=10, max_value=20000, default=MAX_METRIC_POINTS
    )

    def validate_keys(self, value: str) -> list[str]:
        return [key.strip() for key in value.split(",") if key.strip()]


def _metric_column(help_text: str) -> serializers.ListField:
    return serializers.ListField(child=serializers.FloatField(allow_null=True), help_text=help_text)


class MetricSeriesOut(serializers.Serializer[None]):
    """One key's points as columns (Plotly's x/y arrays): point i is step[i], value[i], min[i], max[i]."""

    step = serializers.ListField(
        child=serializers.IntegerField(), help_text="Ascending; each bucket's last step when downsampled."
    )
    value = _metric_column(
        "The bucket's mean (the value itself when not downsampled); null: only NaN reported."
    )
    min = _metric_column("The bucket's min, so a spike survives downsampling.")
    max = _metric_column("The bucket's max.")


class MetricsOut(serializers.Serializer[None]):
    """The schema only: the view returns ``metrics_for_run``'s columns as they are (20 keys x 1,000 points
    through per-item serializer fields would cost more than the query)."""

    step = serializers.IntegerField(help_text="The run's last stored step: pass it as since_step next time.")
    status = serializers.CharField()
    metrics = serializers.DictField(child=MetricSeriesOut(), help_text="One series per metric key.")


class RolloutFilterIn(serializers.Serializer[None]):
    step = serializers.IntegerField(required=False, min_value=0)
    reward_min = serializers.FloatField(required=False)
    reward_max = serializers.FloatField(required=False)
    correct = serializers.BooleanField(required=False)
    finish_reason = serializers.CharField(required=False)
    search = serializers.CharField(
        required=False, help_text="Text in the prompt or completion, or a prompt id."
    )


class RolloutOut(serializers.ModelSerializer[Rollout]):
    class Meta:
        model = Rollout
        fields: tuple[str, ...] = (
            "id", "step", "prompt_id", "group", "sample_index", "prompt", "completion", "answer",
            "finish_reason", "reward", "rewards", "correct", "advantage", "length",
        )  # fmt: skip


class TokenChannelsOut(serializers.Serializer[None]):
    """One list per channel (one float per token, null where NaN); null: not recorded for this rollout."""

    def get_fields(self) -> dict[str, serializers.Field[Any, Any, Any, Any]]:
        return {
            name: serializers.ListField(child=serializers.FloatField(allow_null=True), allow_null=True)
            for name in TOKEN_CHANNELS
        }


class RolloutDetailOut(RolloutOut):
    """The schema of one rollout with its token arrays; the data is built by ``rollout_detail_data``."""

    details = StrictJSONField()
    tokens = serializers.ListField(child=serializers.CharField())
    token_ids = serializers.ListField(child=serializers.IntegerField())
    channels = TokenChannelsOut()

    class Meta(RolloutOut.Meta):
        fields = (*RolloutOut.Meta.fields, "details", "tokens", "token_ids", "channels")


def rollout_detail_data(detail: RolloutWithTokens) -> dict[str, Any]:
    """Built by hand: 8k tokens x 6 channels through per-item serializer fields would cost more than the
    query itself (the target is well under 100 ms for one 8k-token rollout)."""
    return {
        **RolloutOut(detail.rollout).data,
        "details": detail.rollout.details,
        "tokens": detail.tokens,
        "token_ids": detail.token_ids,
        "channels": detail.channels,
    }


class CheckpointOut(serializers.ModelSerializer[Checkpoint]):
    ref = serializers.SerializerMethodField(
        help_text="How a config of this project names it as a model: model.name_or_path checkpoint:<id>."
    )

    deleted = serializers.SerializerMethodField(
        help_text="True once its files are gone (a run keeps its newest checkpoint.save_total_limit checkpoints): "
        "it can no longer be evaluated or trained from."
    )

    class Meta:
        model = Checkpoint
        fields = ("id", "step", "ref", "deleted", "created_at")  # no server path: configs name it by its id

    def get_ref(self, checkpoint: Checkpoint) -> str:
        return f"checkpoint:{checkpoint.pk}"

    def get_deleted(self, checkpoint: Checkpoint) -> bool:
        return not checkpoint_has_files(checkpoint=checkpoint)


class RunEventFilterIn(serializers.Serializer[None]):
    after_id = serializers.IntegerField(required=False, min_value=0, help_text="Only events after this id.")


class RunEventOut(serializers.ModelSerializer[RunEvent]):
    class Meta:
        model = RunEvent
        fields = ("id", "created_at", "level", "kind", "message", "step")
