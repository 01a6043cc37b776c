"""Sessions, training models and queued calls of the Tinker-compatible API (the web side's writes).

Every call on a model becomes a ``TinkerRequest`` row with the model's next ``seq`` (so calls run in the order
they arrived, as Tinker orders them per model), and the model's worker is woken: a ``serve_model`` task is sent
when no worker holds the model's run lease. The caller gets the row's id at once and polls it with
``retrieve_future`` (webapp/training_api/futures.py).
"""

from __future__ import annotations

import logging
import secrets
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.contrib.auth.models import User
from django.db import transaction
from django.http import Http404
from django.utils import timezone

from trainer.training_api.limits import ApiInputError, ApiLimits, validate_create
from webapp.core.dispatch import send_after_commit
from webapp.core.errors import ApplicationError, InvalidInput
from webapp.core.tasks_by_name import SERVE_TINKER_MODEL, send
from webapp.experiments.config_paths import confine_model
from webapp.experiments.models import FINISHED_STATUSES, EventLevel, Experiment, Run, RunSource, RunStatus
from webapp.experiments.run_lease import lease_client, run_lease_held
from webapp.experiments.services import run_log_event
from webapp.experiments.storable import clean_text
from webapp.teams.models import Project
from webapp.teams.permissions import OPERATE_RUNS, require_role
from webapp.teams.selectors import projects_for_user
from webapp.training_api.models import ModelKind, RequestStatus, TinkerModel, TinkerRequest, TinkerSession

logger = logging.getLogger(__name__)
# A pending call whose worker is gone (no lease) gets its task sent again after this long.
RESEND_AFTER = timedelta(seconds=60)
MAX_METADATA_CHARS = 200


class NotFound(ApplicationError):
    status_code = 404


def api_limits() -> ApiLimits:
    """The bounds every call is held to (trainer/training_api/limits.py), the same on the web and the worker."""
    return ApiLimits()


def input_error(err: ApiInputError) -> InvalidInput:
    """A refused call in the project's error shape, keyed by the field the trainer's check named."""
    return InvalidInput(str(err), {err.field: [str(err)]})


def session_project(*, user: User, project_id: str | None) -> Project:
    """The project a session works in: the one named (slug or id), else the caller's only project where it
    may operate runs. Outsiders and unknown names get the same answer (a project's existence is private)."""
    if project_id:
        found = Project.objects.filter(slug=project_id[:MAX_METADATA_CHARS]).first()
        if found is None and project_id.isdigit():
            found = Project.objects.filter(pk=int(project_id)).first()
        try:
            if found is None:
                raise Http404
            require_role(project=found, user=user, minimum=OPERATE_RUNS)
        except Http404:
            raise NotFound(
                f"No project {project_id!r} among yours: pass project_id=<slug> to ServiceClient (GET "
                "/api/projects/ lists yours)."
            ) from None
        return found
    mine = [p for p in projects_for_user(user=user) if _operates(p, user)]
    if len(mine) != 1:
        slugs = ", ".join(sorted(p.slug for p in mine)[:20]) or "none"
        raise InvalidInput(
            f"Name the project: ServiceClient(project_id=<slug>). Projects where you may run training: {slugs}.",
            {"project_id": ["required when you may run training in more than one project, or in none"]},
        )
    return mine[0]


def _operates(project: Project, user: User) -> bool:
    try:
        require_role(project=project, user=user, minimum=OPERATE_RUNS)
    except Exception:  # Http404 / PermissionDenied: not one of the caller's training projects
        return False
    return True


def session_create(
    *, user: User, project_id: str | None, display_name: str | None, sdk_version: str
) -> TinkerSession:
    project = session_project(user=user, project_id=project_id)
    return TinkerSession.objects.create(
        id=f"session-{secrets.token_hex(12)}",
        project=project,
        user=user,
        display_name=clean_text(display_name or "")[:MAX_METADATA_CHARS],
        sdk_version=clean_text(sdk_version)[:40],
    )


def session_for(*, user: User, session_id: str) -> TinkerSession:
    """The caller's session: its own, in a project it may still operate; 404 otherwise."""
    session = TinkerSession.objects.select_related("project").filter(pk=session_id[:64], user=user).first()
    if session is None or not _operates(session.project, user):
        raise NotFound(f"No session {session_id!r} of yours: create one with a new ServiceClient.")
    return session


def session_heartbeat(*, user: User, session_id: str) -> None:
    session = session_for(user=user, session_id=session_id)
    TinkerSession.objects.filter(pk=session.pk).update(last_heartbeat_at=timezone.now())


def model_for(*, user: User, model_id: str, training: bool = True) -> TinkerModel:
    """A model of one of the caller's sessions (any member who may operate runs may use a project's models
    only through their own sessions: a model id is not a capability). ``training``: a training client's model
    only (a base model's sampler takes sample calls alone)."""
    found = TinkerModel.objects.select_related("session__project", "run").filter(
        pk=str(model_id)[:80], session__user=user
    )
    model = (found.filter(kind=ModelKind.TRAINING) if training else found).first()
    if model is None or not _operates(model.session.project, user):
        raise NotFound(
            f"No training model {model_id!r} of yours: create one with create_lora_training_client."
        )
    return model


def model_create(
    *, user: User, session_id: str, base_model: str, lora_rank: int | None, seed: int | None
) -> TinkerRequest:
    """The training model as a run of the session's project, and its first call (``create_model``)."""
    session = session_for(user=user, session_id=session_id)
    seed = 0 if seed is None else seed
    check_base_model(session=session, base_model=base_model, lora_rank=lora_rank, seed=seed)
    with transaction.atomic():
        model = open_model(
            session=session,
            model_id=f"model-{secrets.token_hex(12)}",
            base_model=base_model,
            lora_rank=lora_rank,
            seed=seed,
            opened=f"Training client of {base_model} opened through the Tinker API by {session.user}.",
        )
        return enqueue(model=model, kind="create_model", payload={})


def check_base_model(*, session: TinkerSession, base_model: str, lora_rank: int | None, seed: int) -> None:
    """Refuse a base model the session's project may not name, or a bad rank or seed, before any row."""
    try:
        validate_create(base_model, lora_rank, seed, api_limits())
    except ApiInputError as err:
        raise input_error(err) from None
    confine_model(base_model, project=session.project, field="base_model")


def open_model(
    *,
    session: TinkerSession,
    model_id: str,
    base_model: str,
    lora_rank: int | None,
    seed: int,
    opened: str,
    kind: str = ModelKind.TRAINING,
    source: tuple[str, str, bool] | None = None,
) -> TinkerModel:
    """A model and its run (``source: tinker``) in the session's project; call inside a transaction.

    ``source`` is (tinker path, saved state folder, with optimizer) for create_training_client_from_state."""
    name = clean_text(session.display_name or f"Tinker: {base_model}")[:MAX_METADATA_CHARS]
    experiment, _ = Experiment.objects.get_or_create(
        project=session.project,
        name=name,
        defaults={
            "config": {},
            "created_by": session.user,
            "description": "Runs trained through the Tinker API.",
        },
    )
    tinker: dict[str, Any] = {"lora_rank": lora_rank, "seed": seed}
    if kind == ModelKind.SAMPLER:
        tinker = {"sampling_only": True}
    if source is not None:
        tinker.update(from_state=source[0], with_optimizer=source[2])
    run = Run.objects.create(
        experiment=experiment,
        status=RunStatus.RUNNING,
        config={"model": {"name_or_path": base_model}, "tinker": tinker},
        created_by=session.user,
        started_at=timezone.now(),
        source=RunSource.TINKER,
        source_info={"sdk_version": session.sdk_version, "session": session.pk, "run_name": name},
        external_key=ingest_key(model_id),
    )
    model = TinkerModel.objects.create(
        id=model_id,
        session=session,
        run=run,
        kind=kind,
        base_model=base_model,
        lora_rank=lora_rank,
        seed=seed,
        source_state=source[1] if source is not None else "",
        source_optimizer=source[2] if source is not None else False,
    )
    run_log_event(run_id=run.pk, level=EventLevel.INFO, kind="started", message=opened, step=0)
    return model


def ingest_key(model_id: str) -> str:
    """The run's key for the ingest API (docs/ingest.md): the model id with ':' as '-', so a script can send
    its own metrics (rewards) to the run of its training client with ``start_run(key=...)``."""
    return model_id.replace(":", "-")


def sampler_model(*, user: User, session_id: str, base_model: str) -> TinkerModel:
    """The session's sampler of a bare base model (one per session and base model, reused while its run is
    on): a model like a training client's, so one worker holds it and runs its samples in order."""
    session = session_for(user=user, session_id=session_id)
    check_base_model(session=session, base_model=base_model, lora_rank=None, seed=0)
    with transaction.atomic():
        TinkerSession.objects.select_for_update().filter(pk=session.pk).first()  # one sampler at a time
        found = (
            TinkerModel.objects.filter(session=session, kind=ModelKind.SAMPLER, base_model=base_model)
            .exclude(run__status__in=FINISHED_STATUSES)
            .first()
        )
        if found is not None:
            return found
        model = open_model(
            session=session,
            model_id=f"model-{secrets.token_hex(12)}",
            base_model=base_model,
            lora_rank=None,
            seed=0,
            opened=f"Sampling client of {base_model} opened through the Tinker API by {session.user}.",
            kind=ModelKind.SAMPLER,
        )
        enqueue(model=model, kind="create_model", payload={})  # the worker loads it before the first sample
        return model


def enqueue(*, model: TinkerModel, kind: str, payload: dict[str, Any]) -> TinkerRequest:
    """Queue one call on ``model`` after the ones before it, and make sure a worker will take it."""
    with transaction.atomic():
        locked = TinkerModel.objects.select_for_update().select_related("run").get(pk=model.pk)
        if locked.run.status in FINISHED_STATUSES:  # 400, not 409: the SDK retries a 409 for minutes
            raise ApplicationError(
                f"The run behind training model {model.pk} is {locked.run.status} (run {locked.run.pk}): "
                "create a new training client to train again."
            )
        call = TinkerRequest.objects.create(
            id=f"req-{secrets.token_hex(12)}", model=locked, seq=locked.next_seq, kind=kind, payload=payload
        )
        locked.next_seq += 1
        locked.save(update_fields=["next_seq"])
        wake(model=locked)
        transaction.on_commit(lambda: nudge(model_id=locked.pk))
    return call


def wake_key(model_id: str) -> str:
    return f"rlvr:tinker-wake:{model_id}"


def nudge(*, model_id: str) -> None:
    """Wake the model's worker from its wait at once (a Redis list it blocks on). Only a speed-up: a worker
    that misses it finds the call in the database at its next look, within a second."""
    try:
        client = lease_client()
        client.lpush(wake_key(model_id), "1")
        client.expire(wake_key(model_id), 60)
    except Exception as err:  # redis.RedisError or a bad REDIS_URL: the worker's own look finds the call
        logger.warning("could not wake the worker of Tinker model %s (%s)", model_id, err)


def wake(*, model: TinkerModel, force: bool = False) -> None:
    """Send ``serve_model`` (after commit) unless a worker holds the model's run, or one was sent lately and
    may still be starting (``dispatched_at``, cleared by the worker that takes the model). A duplicate delivery
    is harmless: the second worker cannot take the lease."""
    if not force and (_dispatched_lately(model) or run_lease_held(run_id=model.run_id)):
        return
    if not settings.RLVR_ENQUEUE:
        return
    TinkerModel.objects.filter(pk=model.pk).update(dispatched_at=timezone.now())
    send_after_commit(
        lambda: send(SERVE_TINKER_MODEL, model.pk),
        lambda err: None,  # the call stays pending; retrieve_future sends the task again
        f"the Tinker model {model.pk}",
        unsent_message="The task queue (Redis) cannot be reached: the call is kept and runs once it is back.",
    )


def pending_without_worker(call: TinkerRequest) -> bool:
    """A call still pending whose model has no live worker and no task sent lately."""
    if call.status != RequestStatus.PENDING:
        return False
    return not _dispatched_lately(call.model) and run_lease_held(run_id=call.model.run_id) is False


def _dispatched_lately(model: TinkerModel) -> bool:
    """A serve_model task was sent less than RESEND_AFTER ago and no worker has taken the model since."""
    return model.dispatched_at is not None and timezone.now() - model.dispatched_at < RESEND_AFTER
