"""Reads of reward models, their versions and the project's secrets; every ``*_get_for_user`` answers 404 to outsiders.

Secrets are read here only as names and dates (``secrets_for_project``), except by ``secret_values_for_worker``,
which the worker calls right before scoring and whose values go nowhere but ``provide_secrets``.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.db.models import Count, OuterRef, QuerySet, Subquery
from django.http import Http404

from trainer.errors import ConfigError
from webapp.core.paths import CHECKPOINT_PREFIX, TINY_PREFIX
from webapp.experiments.config_paths import judge_secret_names
from webapp.rewards import secrets
from webapp.rewards.models import ProjectSecret, RewardModel, RewardModelVersion, SourceKind
from webapp.teams.models import Project
from webapp.teams.permissions import READ, require_role
from webapp.teams.selectors import AnyUser


@dataclass(frozen=True)
class SecretRow:
    """What anyone may learn about a secret: never its value."""

    name: str
    updated_at: datetime
    updated_by: str | None
    readable: (
        bool  # False: stored under another key (RLVR_SECRETS_KEY / RLVR_SECRET_KEY changed): set it again
    )


def reward_models_for_project(*, project: Project) -> QuerySet[RewardModel]:
    """The project's reward models, each with its latest version's number and kind and its version count."""
    latest = RewardModelVersion.objects.filter(reward_model=OuterRef("pk")).order_by("-number")
    return (
        RewardModel.objects.filter(project=project)
        .annotate(
            latest_number=Subquery(latest.values("number")[:1]),
            latest_kind=Subquery(latest.values("kind")[:1]),
            version_count=Count("versions", distinct=True),
        )
        .order_by("name", "id")
    )


def reward_model_get_for_user(*, reward_model_id: int, user: AnyUser) -> RewardModel:
    reward_model = RewardModel.objects.select_related("project").filter(pk=reward_model_id).first()
    if reward_model is None:
        raise Http404("No such reward model.")
    require_role(project=reward_model.project, user=user, minimum=READ)
    return reward_model


def version_get_for_user(*, version_id: int, user: AnyUser) -> RewardModelVersion:
    version = (
        RewardModelVersion.objects.select_related("reward_model", "reward_model__project", "created_by")
        .filter(pk=version_id)
        .first()
    )
    if version is None:
        raise Http404("No such reward model version.")
    require_role(project=version.reward_model.project, user=user, minimum=READ)
    return version


def versions_for_reward_model(*, reward_model: RewardModel) -> QuerySet[RewardModelVersion]:
    return (
        RewardModelVersion.objects.filter(reward_model=reward_model)
        .select_related("created_by", "reward_model")
        .order_by("-number")
    )


def versions_for_project(*, project: Project) -> QuerySet[RewardModelVersion]:
    """Every version in the project (newest first within a reward model): what the experiment form offers."""
    return (
        RewardModelVersion.objects.filter(reward_model__project=project)
        .select_related("reward_model", "created_by")
        .order_by("reward_model__name", "-number")
    )


def reward_model_is_process(*, reward_model: RewardModel) -> bool | None:
    """True when the reward model's versions are process reward models, False when they are scalar or judge
    versions, None while it has none (it may then take either family: services.require_family)."""
    kinds = set(RewardModelVersion.objects.filter(reward_model=reward_model).values_list("kind", flat=True))
    return None if not kinds else SourceKind.PRM in kinds


def version_made_from(version: RewardModelVersion) -> str | None:
    """The reference a scalar or PRM version was made from when it is one a member may see (``checkpoint:<id>``, a
    ``tiny:`` name); None for a server folder, whose path stays on the server."""
    stored = str(version.params.get("model") or "")
    return stored if stored.startswith((CHECKPOINT_PREFIX, TINY_PREFIX)) else None


def secrets_for_project(*, project: Project) -> list[SecretRow]:
    """Names, dates and whether each can still be decrypted; never a value."""
    rows = ProjectSecret.objects.filter(project=project).select_related("updated_by").order_by("name")
    return [
        SecretRow(
            name=row.name,
            updated_at=row.updated_at,
            updated_by=row.updated_by.username if row.updated_by else None,
            readable=secrets.readable(row.ciphertext),
        )
        for row in rows
    ]


def secret_names(*, project: Project) -> list[str]:
    return list(ProjectSecret.objects.filter(project=project).order_by("name").values_list("name", flat=True))


def secret_values_for_worker(*, project: Project, names: list[str]) -> dict[str, str]:
    """``{name: value}`` of the project's secrets ``names`` (the worker provides them to the scoring process).

    ConfigError naming every secret that is missing or cannot be decrypted, never a value."""
    rows = {row.name: row for row in ProjectSecret.objects.filter(project=project, name__in=names)}
    missing = [name for name in names if name not in rows]
    values: dict[str, str] = {}
    unreadable: list[str] = []
    for name in names:
        if name in rows:
            try:
                values[name] = secrets.decrypt(rows[name].ciphertext)
            except secrets.SecretUnreadable:
                unreadable.append(name)
    problems = []
    if missing:
        problems.append(
            f"the project has no secret named {', '.join(repr(n) for n in missing)}: add it on the project's "
            "Secrets page"
        )
    if unreadable:
        problems.append(
            f"the secret {', '.join(repr(n) for n in unreadable)} was stored under another key (RLVR_SECRETS_KEY "
            "or RLVR_SECRET_KEY changed): set it again on the project's Secrets page"
        )
    if problems:
        raise ConfigError("a judge's API key is not available: " + "; ".join(problems))
    return values


def judge_secrets_for_config(*, project: Project, config: dict[str, Any]) -> dict[str, str]:
    """The decrypted secrets a run's or evaluation's config names for its judges (``{}`` when none): what the
    worker passes to ``trainer.verifiers.secrets.provide_secrets``. ConfigError naming a missing one."""
    names = judge_secret_names(config)
    return secret_values_for_worker(project=project, names=names) if names else {}
