"""Writes of reward-source evaluations: start one (web process), and record a worker's progress and outcome.

An evaluation compares reward sources side by side (trainer/rewards/evaluation.py: pairwise accuracy, Best-of-N,
the judge audit; agreement with people from webapp/annotation). It outlives a request, so the API stores a
``RewardJob(kind=evaluate)`` and sends ``workers.tasks_reward_eval.run_reward_evaluation`` to the ``eval`` queue
after commit (dispatch_evaluation.py); the page polls the job. Who may start one: any reader of the project, as the
verifier audit (webapp/verification/job_services.py): it only scores and stores figures, changing nothing a run
holds. Cancel: whoever started it, or an admin.

A saved rubric (``{"rubric": id}``, optionally with ``"judge_model"``: the local model of its judge criteria, a name or
the ``rubric.judge_model`` settings) is stored as ``{"name": "rubric", "params": <its config section>, "label": <its
name>}``: a snapshot, so editing the rubric later does not change a job. Its judge model and any reward model or judge
a ``verifier`` rule names are confined as an experiment's rubric and verifiers are.

A step scorer (``{"process_scorer": {name, params}}``, or a PRM version ``{"reward_model_version": id}`` of kind
``prm``) is stored as ``{"name": <scorer>, "params", "label", "origin", "kind": "process"}`` and only the ``process``
part evaluates it (trainer/rewards/evaluation_process.py); its ``params.model`` is confined as an experiment's
``process_reward.scorer.params.model`` (``rm:<id>`` of a PRM version of the project, or a model).

Every reference is checked here when the job is stored (sources through webapp/experiments/config_paths.py, as a
benchmark's verifiers are; pairs, tasks and the policy must be the project's) and again on the worker
(``evaluation_inputs_for_worker``), which resolves them to server paths only then.
"""

from __future__ import annotations

import copy
import logging
from typing import Any

from django.db import transaction
from django.utils import timezone
from pydantic import ValidationError

from webapp.core.dispatch import send_after_commit
from webapp.core.errors import Conflict, InvalidInput
from webapp.core.paths import DATASET_PREFIX, parse_reference
from webapp.datafiles.models import Dataset
from webapp.experiments.config_paths import (
    confine_benchmark_config,
    confine_model,
    confine_process_model,
    confine_reward_sources,
    judge_secret_names,
)
from webapp.rewards.dispatch_evaluation import enqueue_reward_evaluation
from webapp.rewards.evaluation_selectors import check_reference
from webapp.rewards.models import JobKind, JobStatus, RewardJob, RewardModelVersion, SourceKind
from webapp.rubrics.models import Rubric
from webapp.rubrics.selectors import rubric_to_config
from webapp.teams.models import Project, Role
from webapp.teams.permissions import READ, require_role
from webapp.teams.selectors import AnyUser
from webapp.verification.models import VerifierVersion, config_label

logger = logging.getLogger(__name__)

START_EVALUATION = READ
CANCEL_OTHERS_EVALUATIONS = Role.ADMIN
ERROR_CHARS = 20_000
DATASET_MAX_TOKENS = (
    256  # new tokens per sample on an uploaded benchmark unless best_of_n.max_tokens says otherwise
)
FINISHED = (JobStatus.SUCCEEDED, JobStatus.FAILED, JobStatus.CANCELLED)
RUBRIC_SOURCE = "rubric"  # trainer/rewards/evaluation.py's RUBRIC_SOURCE
PROCESS_KIND = "process"  # trainer/rewards/evaluation_process.py's PROCESS_KIND: a stored step-scorer entry
PROCESS_SCORER_KEY = "process_scorer"  # ... and how a step scorer is given
CHAIN_SCORERS = (
    "oracle_chain",
    "monte_carlo",
)  # need each problem's answer: the Best-of-N samples, not a file


def reward_evaluation_start(*, project: Project, actor: AnyUser, data: Any, name: str = "") -> RewardJob:
    """Validate ``data`` (``RewardEvaluationConfig``'s fields), resolve its sources and queue the job."""
    require_role(project=project, user=actor, minimum=START_EVALUATION)
    config = _validated(data)
    config["sources"] = _resolve_sources(project, config["sources"])
    _check_parts(config)
    _check_references(project, config)
    with transaction.atomic():
        job = RewardJob.objects.create(
            project=project, kind=JobKind.EVALUATE, name=name[:200] or _default_name(config), config=config,
            progress={"phase": "queued", "done": 0, "total": 0},
            created_by=actor if actor.is_authenticated else None,
        )  # fmt: skip
        _enqueue_after_commit(job.pk)
    return job


def reward_evaluation_cancel(*, job: RewardJob, actor: AnyUser) -> RewardJob:
    """A queued job is cancelled at once; a running one at its next batch, keeping what it had computed."""
    if job.created_by_id != getattr(actor, "pk", None):
        require_role(project=job.project, user=actor, minimum=CANCEL_OTHERS_EVALUATIONS)
    with transaction.atomic():
        row = RewardJob.objects.select_for_update().get(pk=job.pk)
        if row.status in FINISHED:
            raise Conflict(
                f"This evaluation has already finished ({row.status}): there is nothing to cancel."
            )
        if row.status == JobStatus.QUEUED:  # its message may still arrive: the worker then skips it
            row.status, row.finished_at = JobStatus.CANCELLED, timezone.now()
        row.cancel_requested = True
        row.save(update_fields=["status", "finished_at", "cancel_requested"])
    return row


# ---------------------------------------------------------------------------------------------------- the worker


def evaluation_mark_started(*, job_id: int) -> RewardJob | None:
    """The job, now running from its start; None when it is gone, finished, or cancelled while queued."""
    with transaction.atomic():
        job = RewardJob.objects.select_for_update().filter(pk=job_id, kind=JobKind.EVALUATE).first()
        if job is None or job.status in FINISHED:
            return None
        job.status = JobStatus.RUNNING
        job.started_at = job.started_at or timezone.now()
        job.attempts += 1
        job.progress = {"phase": "starting", "done": 0, "total": 0}
        job.save(update_fields=["status", "started_at", "attempts", "progress"])
    return job


def evaluation_progress(*, job_id: int, progress: dict[str, Any]) -> bool:
    """Store ``progress`` (phase, done, total, ...); True when a cancel was asked for (the worker then stops)."""
    RewardJob.objects.filter(pk=job_id, status=JobStatus.RUNNING).update(progress=progress)
    return RewardJob.objects.filter(pk=job_id, cancel_requested=True).exists()


def evaluation_finish(*, job_id: int, status: str, result: dict[str, Any]) -> None:
    """Store the result ('succeeded', or 'cancelled' with what was computed before the stop)."""
    RewardJob.objects.filter(pk=job_id).update(
        status=status, result=result, finished_at=timezone.now(),
        progress={"phase": status, "done": 1, "total": 1},
    )  # fmt: skip


def evaluation_fail(*, job_id: int, message: str) -> None:
    RewardJob.objects.filter(pk=job_id).update(
        status=JobStatus.FAILED, error=message[:ERROR_CHARS], finished_at=timezone.now()
    )


def evaluation_inputs_for_worker(*, job: RewardJob) -> dict[str, Any]:
    """The job's config as the worker must load it: sources and policy checked again and resolved to server paths
    (``rm:<id>`` -> the version's folder), plus the names of the project secrets its judges need.
    ConfigError (shown as it is) when a reference no longer holds."""
    from trainer.errors import ConfigError

    config = copy.deepcopy(job.config)
    try:
        entries = [_plain(e) for e in config["sources"]]
        config["sources"] = _confined(job.project, entries, resolve=True)
        if config.get("best_of_n"):
            bon = config["best_of_n"]
            bon["policy"] = confine_model(
                bon["policy"], project=job.project, resolve=True, field="best_of_n.policy"
            )
            config["benchmark_config"] = _benchmark_for_worker(job.project, bon)
        labels = (config.get("process") or {}).get("labels")
        if labels:
            config["process_labels_path"] = _labels_dataset(job.project, labels["dataset"]).path
    except InvalidInput as err:
        raise ConfigError(f"reward evaluation {job.pk}: {err.message}") from None
    config["secret_names"] = judge_secret_names(
        {"verifiers": config["sources"] + _rule_verifiers(config["sources"])}
    )
    return config


# ---------------------------------------------------------------------------------------------------- validation


def _validated(data: Any) -> dict[str, Any]:
    from trainer.rewards.evaluation import RewardEvaluationConfig

    if not isinstance(data, dict):
        raise InvalidInput(
            "An evaluation must be a JSON object.", {"non_field_errors": ["Expected an object."]}
        )
    try:
        return RewardEvaluationConfig.model_validate(data).model_dump(mode="json")
    except ValidationError as err:
        fields: dict[str, list[str]] = {}
        for e in err.errors():
            path = ".".join(str(p) for p in e["loc"]) or "non_field_errors"
            fields.setdefault(path, []).append(str(e["msg"]).removeprefix("Value error, "))
        first = next(iter(fields.items()))
        raise InvalidInput(f"Invalid evaluation: {first[0]}: {first[1][0]}", fields) from None


def _resolve_sources(project: Project, raw: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Each source as a config ``verifiers`` entry {name, params, label, origin}, its params validated by the trainer
    source's own model and its files confined; labels made unique. InvalidInput naming every bad source."""
    entries: list[dict[str, Any]] = []
    fields: dict[str, list[str]] = {}
    for i, item in enumerate(raw):
        try:
            entries.append(_entry(project, item, f"sources.{i}"))
        except InvalidInput as err:
            fields.update(err.fields)
    if fields:
        first = next(iter(fields.items()))
        raise InvalidInput(f"{first[0]}: {first[1][0]}", fields)
    seen: dict[str, int] = {}
    for entry in entries:
        base = entry["label"]
        seen[base] = seen.get(base, 0) + 1
        if seen[base] > 1:
            entry["label"] = f"{base}_{seen[base]}"
    _confined(project, [_plain(e) for e in entries], resolve=False)
    return entries


def _entry(project: Project, item: dict[str, Any], field: str) -> dict[str, Any]:
    from trainer.verifiers import VERIFIERS
    from trainer.verifiers.spec import VerifierSpec

    if "reward_model_version" in item or "verifier_version" in item:
        return _saved_entry(project, item, field)
    if PROCESS_SCORER_KEY in item:
        return _process_entry(item, field, {"entry": True})
    if RUBRIC_SOURCE in item and "name" not in item:
        return _rubric_entry(project, item, field)
    try:
        spec = VerifierSpec.model_validate(item)
    except ValidationError as err:
        raise _invalid(field, f"Not a reward source: {err.errors()[0]['msg']}") from None
    if spec.name not in VERIFIERS:
        raise _invalid(
            f"{field}.name", f"Unknown reward source {spec.name!r}; valid: {', '.join(VERIFIERS.names())}."
        )
    try:
        params = VERIFIERS.get(spec.name).Params.model_validate(spec.params).model_dump(mode="json")
    except ValidationError as err:
        e = err.errors()[0]
        where = ".".join([f"{field}.params", *(str(p) for p in e["loc"])])
        raise _invalid(where, str(e["msg"]).removeprefix("Value error, ")) from None
    return {"name": spec.name, "params": params, "label": spec.key, "origin": {"entry": True}}


def _saved_entry(project: Project, item: dict[str, Any], field: str) -> dict[str, Any]:
    kind = "reward_model_version" if "reward_model_version" in item else "verifier_version"
    ref = item.get(kind)
    if not isinstance(ref, int) or isinstance(ref, bool) or set(item) != {kind}:
        raise _invalid(field, f"Give {{{kind!r}: <id>}} and nothing else.")
    if kind == "reward_model_version":
        rm_version = (
            RewardModelVersion.objects.select_related("reward_model")
            .filter(pk=ref, reward_model__project=project)
            .first()
        )
        if rm_version is None:
            raise _invalid(field, f"Reward model version {ref} is not a version of this project.")
        if rm_version.kind == SourceKind.PRM:  # a step scorer: the process part evaluates it
            label = f"{config_label(rm_version.reward_model.name)}_v{rm_version.number}"
            item = {PROCESS_SCORER_KEY: rm_version.scorer_entry, "label": label}
            return _process_entry(item, field, {kind: ref, "name": str(rm_version)})
        entry, shown, number = rm_version.config_entry, str(rm_version), rm_version.number
    else:
        v_version = (
            VerifierVersion.objects.select_related("definition")
            .filter(pk=ref, definition__project=project)
            .first()
        )
        if v_version is None:
            raise _invalid(field, f"Verifier version {ref} is not a version of this project.")
        entry, shown, number = (
            v_version.config_entry,
            f"{v_version.definition.name} v{v_version.number}",
            v_version.number,
        )
    return {**entry, "label": f"{entry['label']}_v{number}", "origin": {kind: ref, "name": shown}}


def _process_entry(item: dict[str, Any], field: str, origin: dict[str, Any]) -> dict[str, Any]:
    """A step scorer as a source entry, its params validated by the scorer's own model."""
    from trainer.rewards.evaluation_process import process_source_entry

    try:
        entry = process_source_entry(item, field)
    except ValueError as err:
        where, _, message = str(err).partition(": ")
        raise _invalid(where, message) from None
    return {**entry, "origin": origin}


def _rubric_entry(project: Project, item: dict[str, Any], field: str) -> dict[str, Any]:
    """A rubric of the project as a source entry: its config section (validated as the trainer's ``rubric``)."""
    from trainer.rubrics.config import RubricConfig

    ref, judge_model = item.get(RUBRIC_SOURCE), item.get("judge_model")
    if not isinstance(ref, int) or isinstance(ref, bool) or not set(item) <= {RUBRIC_SOURCE, "judge_model"}:
        raise _invalid(field, 'Give {"rubric": <id>} and, for judge criteria, "judge_model", nothing else.')
    if isinstance(judge_model, str):
        judge_model = {"name_or_path": judge_model}
    if judge_model is not None and not isinstance(judge_model, dict):
        raise _invalid(
            f"{field}.judge_model", "Name a local judge model, or give the rubric judge_model settings."
        )
    rubric = Rubric.objects.prefetch_related("criteria").filter(pk=ref, project=project).first()
    if rubric is None:
        raise _invalid(field, f"Rubric {ref} is not a rubric of this project.")
    try:
        section = RubricConfig.model_validate(rubric_to_config(rubric, judge_model=judge_model))
    except ValidationError as err:
        e = err.errors()[0]
        loc = [str(p) for p in e["loc"]]
        where = ".".join([field, *loc]) if loc[:1] == ["judge_model"] else field
        raise _invalid(
            where, f"Rubric {rubric.name!r}: {str(e['msg']).removeprefix('Value error, ')}"
        ) from None
    return {
        "name": RUBRIC_SOURCE,
        "params": section.model_dump(mode="json"),
        "label": rubric.name,
        "origin": {RUBRIC_SOURCE: rubric.pk, "name": rubric.name},
    }


def _rule_verifiers(entries: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The verifier entries the ``verifier`` rules of the rubric sources name (their judges' secrets count too)."""
    return [
        (criterion.get("rule") or {}).get("params") or {}
        for entry in entries
        if entry.get("name") == RUBRIC_SOURCE
        for criterion in entry["params"].get("criteria") or []
        if (criterion.get("rule") or {}).get("type") == "verifier"
    ]


def _confined_rubric(project: Project, entry: dict[str, Any], *, resolve: bool, field: str) -> dict[str, Any]:
    """A rubric entry whose judge model and ``verifier`` rules name only what the project may use (with ``resolve``
    server paths), as an experiment's ``rubric`` and ``verifiers`` are confined."""
    out = copy.deepcopy(entry)
    params = out["params"]
    judge = params.get("judge_model") or {}
    if judge.get("name_or_path"):
        judge["name_or_path"] = confine_model(
            judge["name_or_path"], project=project, resolve=resolve, field=f"{field}.judge_model.name_or_path"
        )
    for k, criterion in enumerate(params.get("criteria") or []):
        rule = criterion.get("rule") or {}
        if rule.get("type") == "verifier":
            where = f"{field}.params.criteria.{k}.rule.params"
            rule["params"] = confine_reward_sources([rule.get("params") or {}], project=project, resolve=resolve,
                                                    field=where)[0]  # fmt: skip
    return out


def _plain(entry: dict[str, Any]) -> dict[str, Any]:
    kind = {"kind": entry["kind"]} if entry.get("kind") else {}
    return {"name": entry["name"], "params": entry.get("params") or {}, "label": entry["label"], **kind}


def _confined_process(
    project: Project, entry: dict[str, Any], *, resolve: bool, field: str
) -> dict[str, Any]:
    """A step scorer entry whose model (the ``prm`` scorer's checkpoint) names only what the project may use."""
    out = copy.deepcopy(entry)
    if out["params"].get("model") is not None:
        out["params"]["model"] = confine_process_model(
            out["params"]["model"], project=project, resolve=resolve, field=f"{field}.params.model"
        )
    return out


def _confined(project: Project, entries: list[dict[str, Any]], *, resolve: bool) -> list[dict[str, Any]]:
    """The entries through the benchmark verifiers' confinement; errors keyed ``sources.<i>...``."""
    try:
        out = confine_benchmark_config(
            {"verifiers": entries}, project=project, resolve=resolve, field="sources"
        )
    except InvalidInput as err:
        fields = {k.replace("sources.verifiers.", "sources.", 1): v for k, v in err.fields.items()}
        raise InvalidInput(err.message.replace("verifiers.", "sources.", 1), fields) from None
    confined = list(out.get("verifiers", entries))
    return [
        _confined_process(project, e, resolve=resolve, field=f"sources.{i}")
        if e.get("kind") == PROCESS_KIND
        else _confined_rubric(project, e, resolve=resolve, field=f"sources.{i}")
        if e.get("name") == RUBRIC_SOURCE
        else e
        for i, e in enumerate(confined)
    ]


def _check_parts(config: dict[str, Any]) -> None:
    """Step scorers go to the process part and the other sources to the other parts: each part needs its kind."""
    process = [e for e in config["sources"] if e.get("kind") == PROCESS_KIND]
    scalar_parts = [p for p in ("pairwise", "audit", "agreement") if config.get(p)]
    if process and not config.get("process"):
        raise _invalid(
            "process",
            f"{process[0]['label']} is a step scorer: tick the process part to evaluate it as a PRM.",
        )
    if config.get("process") and not process:
        raise _invalid(
            "process",
            "The process part evaluates step scorers: add a PRM version, the chain oracle or Monte Carlo as a source.",
        )
    if scalar_parts and len(process) == len(config["sources"]):
        raise _invalid(
            scalar_parts[0],
            f"{scalar_parts[0]} scores whole responses and every source is a step scorer: add a verifier, reward "
            "model, judge or rubric, or leave the part out.",
        )
    chain = [e for e in process if e["name"] in CHAIN_SCORERS]
    if chain and not config.get("best_of_n"):
        raise _invalid(
            "best_of_n",
            f"{chain[0]['label']} ({chain[0]['name']}) scores the Best-of-N samples, whose answers it checks: add "
            "the best_of_n part (a step-labelled file carries no answers).",
        )


def _check_references(project: Project, config: dict[str, Any]) -> None:
    from trainer.evaluation.suite import builtin_benchmark_names

    pairwise = config.get("pairwise") or {}
    for kind in ("dataset", "annotation_task", "run"):
        if pairwise.get(kind) is not None:
            check_reference(project=project, kind=kind, ref_id=pairwise[kind], field=f"pairwise.{kind}")
    if config.get("agreement"):
        task_id = config["agreement"]["annotation_task"]
        check_reference(
            project=project, kind="annotation_task", ref_id=task_id, field="agreement.annotation_task"
        )
    labels = (config.get("process") or {}).get("labels")
    if labels:
        _labels_dataset(project, labels["dataset"])
    bon = config.get("best_of_n")
    if bon:
        dataset_id = parse_reference(bon["benchmark"], DATASET_PREFIX)
        if dataset_id is not None:
            _dataset_benchmark(project, dataset_id)
            if RUBRIC_SOURCE in (bon.get("oracle") or {}):
                raise _invalid(
                    "best_of_n.oracle", "The oracle is a verifier that knows the answer, not a rubric."
                )
            bon["oracle"] = _plain(
                _entry(project, bon.get("oracle") or {"name": "exact"}, "best_of_n.oracle")
            )
            _confined(project, [bon["oracle"]], resolve=False)
        elif bon["benchmark"] not in builtin_benchmark_names():
            message = f"Choose a built-in benchmark ({', '.join(builtin_benchmark_names())}) or {DATASET_PREFIX}<id>."
            raise _invalid("best_of_n.benchmark", message)
        bon["policy"] = confine_model(bon["policy"], project=project, field="best_of_n.policy")


def _dataset_benchmark(project: Project, dataset_id: int) -> Dataset:
    dataset = Dataset.objects.filter(pk=dataset_id, project=project).first()
    if dataset is None or not dataset.answer_field:
        raise _invalid(
            "best_of_n.benchmark",
            f"{DATASET_PREFIX}{dataset_id} is not an uploaded data file of this project with an answer column: "
            "Best-of-N needs the reference answers its oracle checks.",
        )
    return dataset


def _labels_dataset(project: Project, dataset_id: int) -> Dataset:
    dataset = Dataset.objects.filter(pk=dataset_id, project=project).first()
    if dataset is None:
        raise _invalid(
            "process.labels.dataset",
            f"{DATASET_PREFIX}{dataset_id} is not an uploaded data file of this project: upload the step-labelled "
            "file (Math-Shepherd or PRM800K rows) on the project's Datasets page and name its id.",
        )
    return dataset


def _benchmark_for_worker(project: Project, bon: dict[str, Any]) -> dict[str, Any] | None:
    """A dataset benchmark's config with its file resolved to the server path; None for a built-in."""
    dataset_id = parse_reference(bon["benchmark"], DATASET_PREFIX)
    if dataset_id is None:
        return None
    dataset = _dataset_benchmark(project, dataset_id)
    config = {
        "name": f"dataset-{dataset.pk}",
        "data": {"source": "file", "path": f"{DATASET_PREFIX}{dataset.pk}", "format": dataset.format,
                 "prompt_field": dataset.prompt_field, "answer_field": dataset.answer_field},
        "verifiers": [bon["oracle"]],
        "max_tokens": DATASET_MAX_TOKENS,
    }  # fmt: skip
    return confine_benchmark_config(config, project=project, resolve=True, field="best_of_n")


def _default_name(config: dict[str, Any]) -> str:
    labels = ", ".join(e["label"] for e in config["sources"])
    return f"Evaluation of {labels}"[:200]


def _invalid(field: str, message: str) -> InvalidInput:
    return InvalidInput(message, {field: [message]})


def _enqueue_after_commit(job_id: int) -> None:
    def failed(err: Exception) -> None:
        evaluation_fail(
            job_id=job_id,
            message=f"Could not send the evaluation to a worker ({err}). Check that Redis is reachable at "
            "REDIS_URL and that a worker listens on the 'eval' queue, then start it again.",
        )

    send_after_commit(lambda: enqueue_reward_evaluation(job_id), failed, f"reward evaluation {job_id}")
