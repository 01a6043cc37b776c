"""API shapes of reward models, versions and secrets. A secret's value is an input only: no output shape has it."""

from __future__ import annotations

from typing import Any

from rest_framework import serializers

from webapp.api.fields import StrictJSONField
from webapp.rewards.models import RewardModel, RewardModelVersion, SourceKind
from webapp.rewards.secrets import MAX_VALUE_BYTES
from webapp.rewards.selectors import version_made_from


class RewardVersionOut(serializers.ModelSerializer[RewardModelVersion]):
    created_by = serializers.CharField(source="created_by.username", default=None, read_only=True)
    reward_model_name = serializers.CharField(source="reward_model.name", read_only=True)
    # A string, not an enum: drf-spectacular names enums after the field and 'kind' is taken by other apps.
    kind = serializers.CharField(
        read_only=True,
        help_text="scalar (a reward model checkpoint), judge (an endpoint) or prm (a process reward model: the "
        "config's process_reward scorer).",
    )
    origin = serializers.CharField(read_only=True, help_text="trained, folder or endpoint.")
    config_entry = StrictJSONField(
        read_only=True,
        help_text="What a config names to score with this version: its verifiers entry (scalar, judge), or for a "
        "prm the process_reward snippet {process_reward: {scorer: {name: prm, params: {model: rm:<id>, ...}}}}.",
    )
    params = serializers.SerializerMethodField(
        help_text="The source's parameters, every default filled in; a scalar or prm version's model is its rm:<id> "
        "(no server path: configs name it by its id)."
    )
    made_from = serializers.SerializerMethodField(
        help_text="Scalar versions made from a run checkpoint or a built-in model: that checkpoint:<id> or tiny: "
        "name; else null."
    )

    class Meta:
        model = RewardModelVersion
        fields = (
            "id", "reward_model", "reward_model_name", "number", "kind", "origin", "params", "made_from",
            "training_job", "metrics", "note", "created_by", "created_at", "config_entry",
        )  # fmt: skip

    def get_params(self, version: RewardModelVersion) -> dict[str, Any]:
        return version.reference_params

    def get_made_from(self, version: RewardModelVersion) -> str | None:
        return version_made_from(version)


class RewardModelOut(serializers.ModelSerializer[RewardModel]):
    created_by = serializers.CharField(source="created_by.username", default=None, read_only=True)

    class Meta:
        model = RewardModel
        fields = ("id", "project", "name", "description", "created_by", "created_at", "updated_at")


class RewardModelIn(serializers.Serializer[None]):
    name = serializers.CharField(max_length=120, allow_blank=True)
    description = serializers.CharField(required=False, allow_blank=True, default="", max_length=5000)


class RewardModelPatchIn(serializers.Serializer[None]):
    name = serializers.CharField(max_length=120, required=False)
    description = serializers.CharField(required=False, allow_blank=True, max_length=5000)


class RewardVersionIn(serializers.Serializer[None]):
    kind = serializers.ChoiceField(choices=SourceKind.choices)
    model = serializers.CharField(
        required=False, allow_blank=True, default="", max_length=1000,
        help_text="scalar and prm: a folder under RLVR_MODEL_ROOTS, checkpoint:<id> of a run of this project, or a "
        "tiny: name (scalar: a sequence-classification checkpoint with one label; prm: a token-classification "
        "checkpoint or a causal LM).",
    )  # fmt: skip
    params = StrictJSONField(
        required=False, default=dict,
        help_text="The reward source's parameters (scalar: micro_batch_size, max_length, ...; judge: base_url, "
        "model, api_key_secret (a secret's NAME), prompt_template, parse, ...; prm: kind, positive_label, step_tag, "
        "good_token, bad_token, max_length, ...).",
    )  # fmt: skip
    note = serializers.CharField(required=False, allow_blank=True, default="", max_length=300)

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        if attrs["kind"] in (SourceKind.SCALAR, SourceKind.PRM) and not attrs.get("model"):
            raise serializers.ValidationError({"model": ["A scalar or prm version names its checkpoint."]})
        return attrs


class SecretOut(serializers.Serializer[Any]):
    name = serializers.CharField()
    updated_at = serializers.DateTimeField()
    updated_by = serializers.CharField(allow_null=True)
    readable = serializers.BooleanField(
        help_text="false: stored under another key (RLVR_SECRETS_KEY or RLVR_SECRET_KEY changed): set it again."
    )


class SecretIn(serializers.Serializer[None]):
    # DRF's own messages for this field never repeat the value (they quote the limit, not the input).
    value = serializers.CharField(
        max_length=MAX_VALUE_BYTES, trim_whitespace=False, write_only=True,
        help_text="The secret's value (an API key); stored encrypted and never returned.",
    )  # fmt: skip
