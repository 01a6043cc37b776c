"""Writes: reward models, their versions (scalar checkpoints and judge endpoints), and the project's secrets.

Every function checks the actor's role (admins and owners write; members read through the selectors) and raises
ApplicationError / InvalidInput with a message that says how to fix the input; a secret's value is never part of
one. A version's params are validated by the trainer reward source's own schema (``Params`` of the registered
``reward_model`` / ``judge`` verifier, or of the ``prm`` step scorer for a process reward model) and stored with every
default filled in, as verifier versions are. A reward model holds versions of one family: process reward models
(PRMs, scored per step) or outcome sources (scalar and judge, one score per completion), never both, so its training
page and its picker entry mean one thing.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from django.conf import settings
from django.db import IntegrityError, transaction
from django.db.models import Max
from django.http import Http404

from trainer.errors import RLVRError
from trainer.process.scorers import STEP_SCORERS
from trainer.verifiers import VERIFIERS
from webapp.core.errors import Conflict, InvalidInput
from webapp.core.paths import CHECKPOINT_PREFIX, TINY_PREFIX
from webapp.experiments.config_paths import (
    JUDGE_SOURCE,
    REWARD_MODEL_SOURCE,
    check_url_on_list,
    confine_model,
)
from webapp.experiments.models import Run
from webapp.rewards import secrets
from webapp.rewards.models import (
    PRM_SCORER,
    RM_PREFIX,
    Origin,
    ProjectSecret,
    RewardJob,
    RewardModel,
    RewardModelVersion,
    SourceKind,
)
from webapp.teams.models import Project
from webapp.teams.permissions import EDIT_EXPERIMENTS, require_role
from webapp.teams.selectors import AnyUser

EDIT_REWARD_MODELS = EDIT_EXPERIMENTS  # who may define reward sources: those who may define experiments
MANAGE_SECRETS = EDIT_EXPERIMENTS  # owners and admins
MAX_CONFIG_JSON_BYTES = 1_000_000  # a checkpoint's config.json is a few KB


def reward_model_create(*, project: Project, actor: AnyUser, name: str, description: str = "") -> RewardModel:
    """A named slot for versions (a trained RM, a folder, a judge endpoint)."""
    require_role(project=project, user=actor, minimum=EDIT_REWARD_MODELS)
    return RewardModel.objects.create(
        project=project, name=_name(project=project, name=name), description=description.strip()[:5000],
        created_by=_who(actor),
    )  # fmt: skip


def reward_model_update(
    *, reward_model: RewardModel, actor: AnyUser, name: str | None = None, description: str | None = None
) -> RewardModel:
    """Rename or re-describe; the versions (and configs naming ``rm:<id>``) are untouched."""
    require_role(project=reward_model.project, user=actor, minimum=EDIT_REWARD_MODELS)
    if name is not None:
        reward_model.name = _name(project=reward_model.project, name=name, exclude_id=reward_model.pk)
    if description is not None:
        reward_model.description = description.strip()[:5000]
    reward_model.save()
    return reward_model


def reward_model_delete(*, reward_model: RewardModel, actor: AnyUser) -> None:
    """Delete a reward model with its versions; refused once a run's config names one of them (``rm:<id>``)."""
    require_role(project=reward_model.project, user=actor, minimum=EDIT_REWARD_MODELS)
    references = {f"{RM_PREFIX}{pk}" for pk in reward_model.versions.values_list("pk", flat=True)}
    configs = Run.objects.filter(experiment__project=reward_model.project).values_list("config", flat=True)
    used = sum(1 for config in configs.iterator() if references & _models_named(config))
    if used:
        raise Conflict(
            f"{used} run(s) scored with a version of {reward_model.name!r}, so it is kept as their record; "
            "rename it instead of deleting it."
        )
    reward_model.delete()


def _version_model(model: str, project: Any) -> tuple[str, str]:
    """(the name a new version gives, the folder it resolves to): a checkpoint itself, never another version."""
    model = (model or "").strip()
    if model.startswith(RM_PREFIX):
        message = (
            f"A new version names a checkpoint itself, not another version ({model!r}): use that version."
        )
        raise InvalidInput(message, {"model": [message]})
    return model, confine_model(model, project=project, resolve=True, field="model")


def version_create_scalar(
    *, reward_model: RewardModel, actor: AnyUser, model: str, params: Any = None, note: str = ""
) -> RewardModelVersion:
    """A scalar version from a folder under RLVR_MODEL_ROOTS, a run checkpoint ``checkpoint:<id>`` of the project
    or a built-in ``tiny:`` name. The folder must hold a sequence-classification checkpoint with one label (read
    from its config.json: the web process never loads the weights)."""
    project = reward_model.project
    require_role(project=project, user=actor, minimum=EDIT_REWARD_MODELS)
    model, folder = _version_model(model, project)
    if not model.startswith(TINY_PREFIX):
        _require_scalar_head(Path(folder), model)
    validated = _validated(REWARD_MODEL_SOURCE, {**_object(params), "model": folder})
    validated["model"] = model if model.startswith((CHECKPOINT_PREFIX, TINY_PREFIX)) else folder
    return _add_version(
        reward_model=reward_model, actor=actor, kind=SourceKind.SCALAR, origin=Origin.FOLDER, params=validated,
        folder="" if model.startswith(TINY_PREFIX) else folder, note=note,
    )  # fmt: skip


def version_create_judge(
    *, reward_model: RewardModel, actor: AnyUser, params: Any, note: str = ""
) -> RewardModelVersion:
    """A judge version: an OpenAI-compatible endpoint on RLVR_JUDGE_ENDPOINTS; its key names a project secret."""
    project = reward_model.project
    require_role(project=project, user=actor, minimum=EDIT_REWARD_MODELS)
    validated = _validated(JUDGE_SOURCE, _object(params))
    check_url_on_list(
        validated["base_url"], settings.RLVR_JUDGE_ENDPOINTS, setting="RLVR_JUDGE_ENDPOINTS",
        what="judge endpoint", field="params.base_url",
        fix="ask the server's administrator to add its URL prefix to RLVR_JUDGE_ENDPOINTS",
    )  # fmt: skip
    name = validated.get("api_key_secret")
    if name is not None and not ProjectSecret.objects.filter(project=project, name=name).exists():
        message = (
            f"api_key_secret {name!r} is not a secret of this project: add it on the project's Secrets page first "
            "(or leave it empty for an endpoint without a key)"
        )
        raise InvalidInput(message, {"params.api_key_secret": [message]})
    return _add_version(
        reward_model=reward_model, actor=actor, kind=SourceKind.JUDGE, origin=Origin.ENDPOINT, params=validated,
        folder="", note=note,
    )  # fmt: skip


def version_create_prm(
    *, reward_model: RewardModel, actor: AnyUser, model: str, params: Any = None, note: str = ""
) -> RewardModelVersion:
    """A process reward model version from a folder under RLVR_MODEL_ROOTS, a run checkpoint ``checkpoint:<id>`` of
    the project or a built-in ``tiny:`` name: a token-classification checkpoint (a step's score is its positive
    label's probability at the step's last token) or a causal LM scored Math-Shepherd style (step tag, good and bad
    tokens), told apart from its config.json (the web process never loads the weights)."""
    project = reward_model.project
    require_role(project=project, user=actor, minimum=EDIT_REWARD_MODELS)
    model, folder = _version_model(model, project)
    validated = _validated_scorer({**_object(params), "model": folder})
    if not model.startswith(TINY_PREFIX):
        _require_prm_head(Path(folder), model, validated)
    validated["model"] = model if model.startswith((CHECKPOINT_PREFIX, TINY_PREFIX)) else folder
    return _add_version(
        reward_model=reward_model, actor=actor, kind=SourceKind.PRM, origin=Origin.FOLDER, params=validated,
        folder="" if model.startswith(TINY_PREFIX) else folder, note=note,
    )  # fmt: skip


def version_create_trained(
    reward_model: RewardModel,
    folder: str | Path,
    params: dict[str, Any],
    job: RewardJob | None,
    metrics: dict[str, Any],
    user: AnyUser | None,
    *,
    note: str = "",
    kind: SourceKind = SourceKind.SCALAR,
) -> RewardModelVersion:
    """The version a training job produced (called by the worker through the job's service, not from a request):
    ``folder`` is the checkpoint it wrote on the server, ``params`` the source's params (the ``reward_model`` verifier's
    for a scalar ``kind``, the ``prm`` step scorer's for ``SourceKind.PRM``; ``model`` is set to ``folder``),
    ``metrics`` its held-out figures. ``user`` is who started the job (None: nobody)."""
    folder = str(Path(folder).resolve())
    if not Path(folder).is_dir():
        raise InvalidInput(
            f"The trained checkpoint {folder} is not a folder.", {"folder": ["No such folder."]}
        )
    given = {**_object(params), "model": folder}
    validated = _validated_scorer(given) if kind == SourceKind.PRM else _validated(REWARD_MODEL_SOURCE, given)
    validated["model"] = folder
    return _add_version(
        reward_model=reward_model, actor=user, kind=kind, origin=Origin.TRAINED, params=validated,
        folder=folder, note=note or (f"trained by job {job.pk}" if job else "trained"), job=job,
        metrics=dict(metrics or {}),
    )  # fmt: skip


def project_secret_set(*, project: Project, actor: AnyUser, name: str, value: str) -> ProjectSecret:
    """Create or replace a secret (its value encrypted); the answer and every error name it, never the value."""
    require_role(project=project, user=actor, minimum=MANAGE_SECRETS)
    name = secrets.check_name(name)
    ciphertext = secrets.encrypt(secrets.check_value(value))
    row, _ = ProjectSecret.objects.update_or_create(
        project=project, name=name,
        defaults={"ciphertext": ciphertext, "updated_by": _who(actor)},
        create_defaults={"ciphertext": ciphertext, "updated_by": _who(actor), "created_by": _who(actor)},
    )  # fmt: skip
    return row


def project_secret_delete(*, project: Project, actor: AnyUser, name: str) -> None:
    require_role(project=project, user=actor, minimum=MANAGE_SECRETS)
    deleted, _ = ProjectSecret.objects.filter(project=project, name=name).delete()
    if not deleted:
        raise Http404("This project has no secret of that name.")


def _add_version(
    *,
    reward_model: RewardModel,
    actor: AnyUser | None,
    kind: SourceKind,
    origin: Origin,
    params: dict[str, Any],
    folder: str,
    note: str,
    job: RewardJob | None = None,
    metrics: dict[str, Any] | None = None,
) -> RewardModelVersion:
    try:
        with transaction.atomic():
            RewardModel.objects.select_for_update().filter(
                pk=reward_model.pk
            ).first()  # one numbering at a time
            require_family(reward_model=reward_model, process=kind == SourceKind.PRM)
            last = RewardModelVersion.objects.filter(reward_model=reward_model).aggregate(n=Max("number"))[
                "n"
            ]
            version = RewardModelVersion.objects.create(
                reward_model=reward_model, number=(last or 0) + 1, kind=kind, origin=origin, params=params,
                folder=folder, training_job=job, metrics=metrics or {}, note=note.strip()[:300],
                created_by=_who(actor),
            )  # fmt: skip
            reward_model.save(update_fields=["updated_at"])
    except IntegrityError:
        raise Conflict(
            "Someone saved a version of this reward model at the same moment: reload and try again."
        ) from None
    return version


def require_family(*, reward_model: RewardModel, process: bool) -> None:
    """InvalidInput unless ``reward_model`` may take a version (or a training job) of this family: process reward
    models (``process``) and outcome sources (scalar, judge) are never versions of one reward model."""
    versions = RewardModelVersion.objects.filter(reward_model=reward_model)
    other = versions.exclude(kind=SourceKind.PRM) if process else versions.filter(kind=SourceKind.PRM)
    if not other.exists():
        return
    held, wanted = (
        ("scalar or judge versions", "a process reward model") if process else ("process reward model versions",
                                                                               "a scalar reward model or judge")
    )  # fmt: skip
    message = (
        f"{reward_model.name!r} holds {held}: {wanted} goes in a reward model of its own (create one, then add or "
        "train its versions there)"
    )
    raise InvalidInput(message, {"kind": [message]})


def _require_prm_head(folder: Path, shown: str, params: dict[str, Any]) -> None:
    """Refuse a folder that is neither a token-classification checkpoint nor a causal LM (a scalar reward model, an
    encoder), or whose kind contradicts ``params.kind``, from its config.json alone."""
    architectures = _architectures(folder, shown, what="a process reward model")
    token = any(a.endswith("ForTokenClassification") for a in architectures)
    causal = any(a.endswith(("ForCausalLM", "LMHeadModel")) for a in architectures)
    found = ", ".join(architectures) or "none"
    if not (token or causal):
        message = (
            f"{shown!r} is neither a token-classification checkpoint nor a causal language model (architectures: "
            f"{found}): a process reward model scores each step with one of those"
            + (
                "; a sequence-classification checkpoint is a scalar reward model: add it to a scalar reward model"
                if any(a.endswith("ForSequenceClassification") for a in architectures)
                else ""
            )
        )
        raise InvalidInput(message, {"model": [message]})
    kind = params.get("kind", "auto")
    if (kind == "token_classification" and not token) or (kind == "causal_lm" and not causal):
        message = f"params.kind is {kind!r} but {shown!r} is a {'causal LM' if causal else 'token classifier'}: set kind to auto"
        raise InvalidInput(message, {"params.kind": [message]})


def _architectures(folder: Path, shown: str, *, what: str) -> list[str]:
    config = _config_json(folder, shown, what=what)
    return [a for a in config.get("architectures") or [] if isinstance(a, str)]


def _config_json(folder: Path, shown: str, *, what: str) -> dict[str, Any]:
    """A checkpoint folder's config.json; InvalidInput when it has none readable (or one too large to be one)."""
    path = folder / "config.json"
    try:
        if path.stat().st_size > MAX_CONFIG_JSON_BYTES:
            raise ValueError("config.json is too large")
        config = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        config = None
    if not isinstance(config, dict):
        message = f"{shown!r} has no readable config.json: {what} is a Hugging Face checkpoint folder."
        raise InvalidInput(message, {"model": [message]})
    return config


def _validated_scorer(params: dict[str, Any]) -> dict[str, Any]:
    """The ``prm`` step scorer's params with every default filled in, or InvalidInput with its messages."""
    try:
        cls = STEP_SCORERS.get(PRM_SCORER)
    except RLVRError:
        message = f"This server's trainer has no {PRM_SCORER!r} step scorer: update the installation."
        raise InvalidInput(message, {"kind": [message]}) from None
    return _params_of(cls.Params, params)


def _require_scalar_head(folder: Path, shown: str) -> None:
    """Refuse a folder that is not a sequence-classification checkpoint with one label (a causal LM, a policy
    checkpoint, a classifier with several labels), from its config.json alone."""
    config = _config_json(folder, shown, what="a reward model")
    architectures = [a for a in config.get("architectures") or [] if isinstance(a, str)]
    labels = config.get("id2label")
    num_labels = len(labels) if isinstance(labels, dict) and labels else config.get("num_labels", 2)
    if not any(a.endswith("ForSequenceClassification") for a in architectures):
        found = ", ".join(architectures) or "none"
        what = (
            "a run checkpoint of a policy (a causal language model)"
            if shown.startswith(CHECKPOINT_PREFIX)
            else None
        )
        message = (
            f"{shown!r} is {what or f'not a sequence-classification checkpoint (architectures: {found})'}: a scalar "
            "reward model is an AutoModelForSequenceClassification checkpoint with one label; train one here "
            "(Train a reward model) or save one with num_labels=1"
        )
        raise InvalidInput(message, {"model": [message]})
    if num_labels != 1:
        message = (
            f"{shown!r} is a classifier with {num_labels} labels: a scalar reward model has exactly one "
            "(num_labels=1), whose logit is the reward"
        )
        raise InvalidInput(message, {"model": [message]})


def _validated(source: str, params: dict[str, Any]) -> dict[str, Any]:
    """The params with every default filled in by the source's own schema, or InvalidInput with its message."""
    try:
        cls = VERIFIERS.get(source)
    except RLVRError:
        message = f"This server's trainer has no {source!r} reward source: update the installation."
        raise InvalidInput(message, {"kind": [message]}) from None
    return _params_of(cls.Params, params)


def _params_of(model: Any, params: dict[str, Any]) -> dict[str, Any]:
    try:
        return dict(model.model_validate(params).model_dump(mode="json"))
    except (ValueError, TypeError) as err:  # pydantic's ValidationError is a ValueError
        fields: dict[str, list[str]] = {}
        for problem in getattr(err, "errors", lambda: [])():
            where = ".".join(str(p) for p in problem.get("loc", ()))
            fields.setdefault(f"params.{where}" if where else "params", []).append(
                str(problem.get("msg")).removeprefix("Value error, ")
            )
        message = "; ".join(f"{k}: {' '.join(v)}" for k, v in fields.items()) or str(err)
        raise InvalidInput(
            f"The parameters are not valid: {message}", fields or {"params": [message]}
        ) from None


def _object(params: Any) -> dict[str, Any]:
    if params is None:
        return {}
    if not isinstance(params, dict):
        raise InvalidInput(
            "params must be a JSON object.", {"params": ['Write an object, e.g. {"micro_batch_size": 8}.']}
        )
    return dict(params)


def _models_named(config: Any) -> set[str]:
    """The models a config's reward_model verifiers and its process_reward scorer name (``rm:<id>`` among them)."""
    if not isinstance(config, dict):
        return set()
    named = {
        str((entry.get("params") or {}).get("model"))
        for entry in config.get("verifiers") or []
        if isinstance(entry, dict) and entry.get("name") == REWARD_MODEL_SOURCE
    }
    section = config.get("process_reward")
    scorer = section.get("scorer") if isinstance(section, dict) else None
    if isinstance(scorer, dict) and isinstance(scorer.get("params"), dict):
        named.add(str(scorer["params"].get("model")))
    return named


def _name(*, project: Project, name: str, exclude_id: int | None = None) -> str:
    name = (name or "").strip()
    if not name:
        raise InvalidInput("A reward model needs a name.", {"name": ["This field may not be blank."]})
    if len(name) > 120:
        raise InvalidInput("The name is too long.", {"name": ["Use at most 120 characters."]})
    clash = RewardModel.objects.filter(project=project, name=name)
    if exclude_id is not None:
        clash = clash.exclude(pk=exclude_id)
    if clash.exists():
        message = f"This project already has a reward model named {name!r}: pick another name or add a version to it."
        raise InvalidInput(message, {"name": [message]})
    return name


def _who(actor: AnyUser | None) -> Any:
    return actor if actor is not None and actor.is_authenticated else None
