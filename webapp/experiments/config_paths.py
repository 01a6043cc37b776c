"""Confine the server files an experiment or benchmark config names, and resolve them for the worker.

A config from the browser or the API may name only what its own project owns, plus built-ins:

- data (an experiment's ``data``, a benchmark's ``data``, inline ``evaluation.benchmarks``): source
  'file' names an uploaded data file of the same project as ``data.path: dataset:<id>``. The stored config
  keeps the id; only the worker's copy holds the server path. Built-in sources (demo, reasoning_gym)
  name no file.
- models: a tiny: name, ``checkpoint:<id>`` of a run in the same project, or a folder under
  RLVR_MODEL_ROOTS (the rule is webapp/core/paths.py).
- ``evaluation.benchmarks`` strings: built-in suite names only (any other string is a file on the server).
- method params that name a file (marked ``x-path: data-file`` in the method's params model, such as the
  beta_learnability prompt sampler's ``prior_file``): an uploaded data file of the project, ``dataset:<id>``.
- ``rollout.vllm_server_url``: only a rollout server the deployment lists in RLVR_ROLLOUT_SERVERS (a URL
  names a host the worker would send requests to; an unlisted one would let a project member reach any
  address the worker can).
- reward sources (``verifiers`` entries, also inside a benchmark's or inline benchmark's ``verifiers``): a
  ``reward_model``'s ``params.model`` is ``rm:<version id>`` of a scalar reward-model version of the same project
  (resolved to the version's checkpoint folder), or any model as above; a ``judge``'s ``params.base_url`` must
  start with a prefix the deployment lists in RLVR_JUDGE_ENDPOINTS (``url_on_list``, the rule rollout servers
  follow too) and its ``params.api_key_secret`` must name a secret of the project (checked at launch and on the
  worker, when the secret has to exist; ``judge_secret_names`` lists them for the worker, which decrypts them).
- the step scorer of ``process_reward`` (``process_reward.scorer.params.model``, whichever scorer has that
  param: the ``prm`` scorer's checkpoint, an optional model of another scorer): ``rm:<version id>`` of a process
  reward model (PRM) version of the same project (resolved to its folder), or any model as above; a scalar
  reward model's ``rm:<id>`` is refused there, as a PRM's is as a ``reward_model`` verifier.
- ``environment.params.base_url`` of an ``openenv`` environment: only an OpenEnv server the deployment lists in
  RLVR_ENVIRONMENT_SERVERS (exactly, as rollout servers): the worker would connect to whatever it names.
- ``checkpoint.output_dir``: chosen by the server (each run writes to RLVR_RUNS_DIR/run-<id>) whatever
  the config says; the worker sets it from the run row.

Checked when a config is saved (create, update), again at launch (everything must exist then), and a
third time on the worker right before loading, through the same functions: the worker trusts nothing it
did not resolve itself. Refusals are ``InvalidInput`` keyed by the field (``config.data.path``); on the
worker they become a ``ConfigError`` the run's page shows as it is.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit

from django.conf import settings

from trainer.errors import ConfigError
from trainer.methods.axes import AXES
from webapp.core.errors import InvalidInput
from webapp.core.paths import (
    CHECKPOINT_PREFIX,
    DATASET_PREFIX,
    TINY_PREFIX,
    allowed_models_text,
    check_tiny_name,
    model_folder,
    parse_reference,
    refuse_model,
)
from webapp.datafiles.models import Dataset
from webapp.experiments.models import Checkpoint, Run
from webapp.experiments.selectors import checkpoint_has_files
from webapp.rewards.models import RM_PREFIX, Origin, ProjectSecret, RewardModelVersion, SourceKind
from webapp.teams.models import Project

BUILTIN_BENCHMARK_PREFIX = "builtin:"  # trainer/evaluation/suite.py's BUILTIN_PREFIX
REWARD_MODEL_SOURCE = "reward_model"  # trainer/verifiers/reward_model.py's registry name
JUDGE_SOURCE = "judge"  # trainer/verifiers/judge_endpoint.py's registry name


@dataclass(frozen=True)
class _Confiner:
    project: Project
    resolve: bool  # False: a config being saved; True: launch / worker (it must exist; server paths out)

    def model(self, value: str, field: str) -> str:
        if value.startswith(TINY_PREFIX):
            return check_tiny_name(value, field=field)
        checkpoint_id = parse_reference(value, CHECKPOINT_PREFIX)
        if checkpoint_id is not None:
            return self._checkpoint(checkpoint_id, value, field)
        folder = model_folder(value, field=field, must_exist=self.resolve)
        return str(folder) if self.resolve and folder is not None else value

    def _checkpoint(self, checkpoint_id: int, value: str, field: str) -> str:
        checkpoint = (
            Checkpoint.objects.select_related("run")
            .filter(pk=checkpoint_id, run__experiment__project=self.project)
            .first()
        )
        if checkpoint is None:
            raise refuse_model(field, value, "is not a checkpoint of a run in this project")
        if not self.resolve:
            return value
        if checkpoint.run.is_external:
            # An outside run names its checkpoint itself (any path or URI its trainer saw): it is loaded only
            # if it is a folder under RLVR_MODEL_ROOTS on this server, as a model folder typed in a config.
            return str(model_folder(checkpoint.path, field=field, must_exist=True))
        if not checkpoint_has_files(checkpoint=checkpoint):
            raise refuse_model(
                field,
                value,
                "has no files on this server any more (runs keep their last "
                "checkpoint.save_total_limit checkpoints)",
            )
        return checkpoint.path

    def data(self, data: dict[str, Any], field: str) -> dict[str, Any]:
        if data.get("source") != "file":  # demo / reasoning_gym read no file: the worker's copy names none
            return {**data, "path": None} if self.resolve else data
        path = str(data.get("path") or "")
        dataset_id = parse_reference(path, DATASET_PREFIX)
        dataset = (
            None
            if dataset_id is None
            else Dataset.objects.filter(pk=dataset_id, project=self.project).first()
        )
        if dataset is None:
            pk = self.project.pk
            message = (
                f"{field.removeprefix('config.')}.path {path!r} is not an uploaded data file of this project: upload "
                f"it (POST /api/projects/{pk}/datasets/) and set data.path to {DATASET_PREFIX}<id>; "
                f"GET /api/projects/{pk}/datasets/ lists them with the data section to use"
            )
            raise InvalidInput(message, {f"{field}.path": [message]})
        return {**data, "path": dataset.path} if self.resolve else data

    def data_file(self, value: str, field: str) -> str:
        """A file a method reads (its params mark it ``x-path: data-file``): an uploaded data file of the project."""
        dataset_id = parse_reference(value, DATASET_PREFIX)
        dataset = (
            None
            if dataset_id is None
            else Dataset.objects.filter(pk=dataset_id, project=self.project).first()
        )
        if dataset is None:
            message = (
                f"{field.removeprefix('config.')} {value!r} is not an uploaded data file of this project: upload it "
                f"(POST /api/projects/{self.project.pk}/datasets/) and name it as {DATASET_PREFIX}<id>"
            )
            raise InvalidInput(message, {field: [message]})
        return dataset.path if self.resolve else value

    def method_files(self, config: dict[str, Any], out: dict[str, Any], field: str) -> None:
        """Confine every file-valued parameter of the methods ``config`` chose (each axis's ``{name, params}``)."""
        for axis in AXES.values():
            section, key = axis.config_field.split(".")
            value = (config.get(section) or {}).get(key)
            chosen = value if isinstance(value, list) else [value]
            for index, choice in enumerate(chosen):
                if not isinstance(choice, dict) or choice.get("name") not in axis:
                    continue
                schema = axis.entry(choice["name"]).params.model_json_schema().get("properties", {})
                where = (
                    f"{field}.{axis.config_field}"
                    + (f".{index}" if isinstance(value, list) else "")
                    + ".params"
                )
                target = out[section][key][index] if isinstance(value, list) else out[section][key]
                for name, prop in schema.items():
                    given = (choice.get("params") or {}).get(name)
                    if prop.get("x-path") == "data-file" and isinstance(given, str):
                        target["params"][name] = self.data_file(given, f"{where}.{name}")

    def benchmark_spec(self, spec: Any, field: str) -> Any:
        if isinstance(spec, dict):
            out = dict(spec)
            if isinstance(spec.get("data"), dict):
                out["data"] = self.data(spec["data"], f"{field}.data")
            if isinstance(spec.get("verifiers"), list):
                out["verifiers"] = self.reward_sources(spec["verifiers"], f"{field}.verifiers")
            return out
        if isinstance(spec, str) and spec.startswith(BUILTIN_BENCHMARK_PREFIX):
            return spec
        message = (
            f"{field.removeprefix('config.')} {spec!r} is not a built-in benchmark: a config from the web may name "
            f"built-ins ({BUILTIN_BENCHMARK_PREFIX}addition, ...) or inline benchmarks whose data.path is "
            f"{DATASET_PREFIX}<id>, not files on the server"
        )
        raise InvalidInput(message, {field: [message]})

    def reward_sources(self, entries: list[Any], field: str) -> list[Any]:
        """A copy of a ``verifiers`` list whose reward models and judges name only what the project may use (with
        ``resolve``, ``rm:<id>`` becomes the version's folder). InvalidInput naming every refused field."""
        out = copy.deepcopy(entries)
        refused: list[InvalidInput] = []
        for i, entry in enumerate(entries):
            if not isinstance(entry, dict) or entry.get("name") not in (REWARD_MODEL_SOURCE, JUDGE_SOURCE):
                continue
            given = entry.get("params")
            params: dict[str, Any] = given if isinstance(given, dict) else {}
            where = f"{field}.{i}.params"
            try:
                if entry["name"] == REWARD_MODEL_SOURCE:
                    out[i].setdefault("params", {})["model"] = self.reward_model(
                        params.get("model"), f"{where}.model"
                    )
                else:
                    self.judge(params, where)
            except InvalidInput as err:
                refused.append(err)
        if refused:
            raise _joined(refused)
        return out

    def reward_model(self, value: Any, field: str) -> str:
        """A ``reward_model`` verifier's model: ``rm:<id>`` of a scalar version of the project, or a model."""
        if not isinstance(value, str):
            message = (
                f"{field.removeprefix('config.')} must name the scoring model: {RM_PREFIX}<version id> of a "
                f"reward model of this project, or {allowed_models_text()}"
            )
            raise InvalidInput(message, {field: [message]})
        version_id = parse_reference(value, RM_PREFIX)
        if version_id is None:
            return self.model(value, field)
        return self._version_folder(version_id, value, field, SourceKind.SCALAR)

    def process_model(self, value: Any, field: str) -> str:
        """A step scorer's model (``process_reward.scorer.params.model``): ``rm:<id>`` of a PRM version of the
        project, or a model."""
        if not isinstance(value, str):
            message = (
                f"{field.removeprefix('config.')} must name the process reward model: {RM_PREFIX}<version id> of a "
                f"process reward model of this project, or {allowed_models_text()}"
            )
            raise InvalidInput(message, {field: [message]})
        version_id = parse_reference(value, RM_PREFIX)
        if version_id is None:
            return self.model(value, field)
        return self._version_folder(version_id, value, field, SourceKind.PRM)

    def process_scorer(self, config: dict[str, Any], out: dict[str, Any], field: str) -> None:
        """Confine the ``model`` param of whichever step scorer ``process_reward`` chose (null: no model)."""
        model = _scorer_model(config)
        if model is None:
            return
        where = f"{field}.process_reward.scorer.params.model"
        out["process_reward"]["scorer"]["params"]["model"] = self.process_model(model, where)

    def _version_folder(self, version_id: int, value: str, field: str, kind: SourceKind) -> str:
        """The folder of reward-model version ``version_id`` of this project, which must be of ``kind``."""
        version = (
            RewardModelVersion.objects.filter(pk=version_id, reward_model__project=self.project)
            .select_related("reward_model")
            .first()
        )
        if version is None or version.kind != kind:
            raise _wrong_version(value, field, kind, version, self.project.pk)
        if not self.resolve:
            return value
        stored = str(version.params.get("model") or "")
        if stored.startswith((CHECKPOINT_PREFIX, TINY_PREFIX)):  # a checkpoint must still have its files
            return self.model(stored, field)
        if (
            version.origin == Origin.FOLDER
        ):  # a model root may have been changed since: checked as a typed folder
            return self.model(version.folder, field)
        if not Path(version.folder).is_dir():
            message = (
                f"{field.removeprefix('config.')} {value!r}: the checkpoint of {version} is no longer on this "
                "server; train or add a new version"
            )
            raise InvalidInput(message, {field: [message]})
        return version.folder

    def judge(self, params: dict[str, Any], field: str) -> None:
        url = params.get("base_url")
        if isinstance(url, str):
            check_url_on_list(
                url, settings.RLVR_JUDGE_ENDPOINTS, setting="RLVR_JUDGE_ENDPOINTS", what="judge endpoint",
                field=f"{field}.base_url",
            )  # fmt: skip
        name = params.get("api_key_secret")
        if (
            self.resolve
            and isinstance(name, str)
            and not ProjectSecret.objects.filter(project=self.project, name=name).exists()
        ):
            message = (
                f"{field.removeprefix('config.')}.api_key_secret: this project has no secret named {name!r}: "
                "add it on the project's Secrets page (or PUT "
                f"/api/projects/{self.project.pk}/secrets/{name}/), or fix the name"
            )
            raise InvalidInput(message, {f"{field}.api_key_secret": [message]})


def _wrong_version(
    value: str, field: str, kind: SourceKind, version: RewardModelVersion | None, project_id: int
) -> InvalidInput:
    """Why ``rm:<id>`` may not stand where a ``kind`` version is expected (not this project's, or another kind)."""
    wanted = "process reward model" if kind == SourceKind.PRM else "scalar reward-model"
    if version is None:
        problem = f"is not a {wanted} version of this project"
    elif version.kind == SourceKind.PRM:
        problem = (
            "is a process reward model version, not a scalar reward-model version: it scores steps as the config's "
            f"process_reward.scorer (name: prm, params.model: {RM_PREFIX}{version.pk}), not as a verifiers entry"
        )
    else:
        problem = (
            f"is a {version.kind} version, not a {wanted} version: it is a verifiers entry (its config_entry), not a "
            "process_reward scorer's model"
        )
    message = (
        f"{field.removeprefix('config.')} {value!r} {problem}: GET /api/projects/{project_id}/reward-model-versions/ "
        "lists them with the entry to use"
    )
    return InvalidInput(message, {field: [message]})


def _joined(refused: list[InvalidInput]) -> InvalidInput:
    fields = {path: messages for err in refused for path, messages in err.fields.items()}
    more = f" (and {len(refused) - 1} more)" if len(refused) > 1 else ""
    return InvalidInput(refused[0].message + more, fields)


def url_on_list(url: str, allowed: list[str]) -> bool:
    """Whether ``url`` is at or under one of the ``allowed`` URL prefixes: the same scheme, host and port, and a
    path equal to the prefix's or below it (whole segments: ``/v1`` allows ``/v1/`` and ``/v1/x``, not ``/v12``).
    A path with ``.`` or ``..`` segments (plain or percent-encoded) is never on the list.

    >>> url_on_list("http://judge:8000/v1", ["http://judge:8000/v1/"]), url_on_list("http://judge:8001/v1", ["http://judge:8000"])
    (True, False)
    """
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError:
        return False
    path = parts.path.rstrip("/")
    if (
        any(segment in (".", "..") for segment in unquote(path).split("/"))
        or parts.username
        or parts.password
    ):
        return False
    for entry in allowed:
        try:
            listed = urlsplit(entry)
            listed_port = listed.port
        except ValueError:
            continue
        same_place = (
            parts.scheme.lower() == listed.scheme.lower()
            and (parts.hostname or "") == (listed.hostname or "")
            and (port or _DEFAULT_PORTS.get(parts.scheme.lower()))
            == (listed_port or _DEFAULT_PORTS.get(listed.scheme.lower()))
        )
        prefix = listed.path.rstrip("/")
        if same_place and bool(parts.hostname) and (path == prefix or path.startswith(prefix + "/")):
            return True
    return False


_DEFAULT_PORTS = {"http": 80, "https": 443}


def check_url_on_list(
    url: str, allowed: list[str], *, setting: str, what: str, field: str, fix: str = ""
) -> None:
    """InvalidInput keyed by ``field`` unless ``url`` is on ``allowed`` (the deployment setting ``setting``)."""
    if url_on_list(url, allowed):
        return
    listed = (
        ", ".join(allowed) if allowed else f"none are configured: the server's administrator sets {setting}"
    )
    message = f"{what} {url!r} is not one this deployment lists in {setting} ({listed})" + (
        f"; {fix}" if fix else ""
    )
    raise InvalidInput(message, {field: [message]})


def judge_secret_names(config: dict[str, Any]) -> list[str]:
    """The project secrets a config's judges name (its ``verifiers`` and its inline benchmarks' ``verifiers``),
    in order, once each: what the worker decrypts and provides before scoring."""
    lists = [config.get("verifiers") or []]
    lists += [
        spec.get("verifiers") or []
        for spec in (config.get("evaluation") or {}).get("benchmarks") or []
        if isinstance(spec, dict)
    ]
    names: list[str] = []
    for entries in lists:
        for entry in entries:
            if isinstance(entry, dict) and entry.get("name") == JUDGE_SOURCE:
                name = (entry.get("params") or {}).get("api_key_secret")
                if isinstance(name, str) and name not in names:
                    names.append(name)
    return names


def confine_experiment_config(
    config: dict[str, Any], *, project: Project, resolve: bool = False, field: str = "config"
) -> dict[str, Any]:
    """``config`` (validated, every section present) if every file it names is allowed; with ``resolve`` a
    copy whose references are server paths (for the worker). InvalidInput naming every refused field
    otherwise (each check runs, so a form shows them all at once)."""
    confiner = _Confiner(project, resolve)
    out = copy.deepcopy(config)
    refused: list[InvalidInput] = []

    def attempt(check: Callable[[], None]) -> None:
        try:
            check()
        except InvalidInput as err:
            refused.append(err)

    def model(section: str, key: str, value: str, where: str) -> None:
        out[section][key] = confiner.model(value, where)

    attempt(
        lambda: model("model", "name_or_path", config["model"]["name_or_path"], f"{field}.model.name_or_path")
    )
    attempt(lambda: out.update(data=confiner.data(config["data"], f"{field}.data")))
    teacher = config.get("teacher") or {}
    if teacher.get("name_or_path"):
        attempt(
            lambda: model("teacher", "name_or_path", teacher["name_or_path"], f"{field}.teacher.name_or_path")
        )
    rubric = config.get("rubric")
    if rubric and (rubric.get("judge_model") or {}).get("name_or_path"):  # rules-only rubrics name no judge
        judge = f"{field}.rubric.judge_model.name_or_path"
        attempt(
            lambda: out["rubric"]["judge_model"].update(
                name_or_path=confiner.model(rubric["judge_model"]["name_or_path"], judge)
            )
        )
    benchmarks = (config.get("evaluation") or {}).get("benchmarks") or []
    for i, spec in enumerate(benchmarks):

        def benchmark(i: int = i, spec: Any = spec) -> None:
            out["evaluation"]["benchmarks"][i] = confiner.benchmark_spec(
                spec, f"{field}.evaluation.benchmarks.{i}"
            )

        attempt(benchmark)
    attempt(lambda: confiner.method_files(config, out, field))
    attempt(
        lambda: out.update(
            verifiers=confiner.reward_sources(config.get("verifiers") or [], f"{field}.verifiers")
        )
    )
    attempt(lambda: confiner.process_scorer(config, out, field))
    attempt(lambda: _check_rollout_server(config, f"{field}.rollout.vllm_server_url"))
    attempt(lambda: _check_environment_server(config, f"{field}.environment.params.base_url"))
    if refused:
        raise _joined(refused)
    return out


def _check_rollout_server(config: dict[str, Any], field: str) -> None:
    url = (config.get("rollout") or {}).get("vllm_server_url")
    if url:
        _check_exact_server(
            url, settings.RLVR_ROLLOUT_SERVERS, "RLVR_ROLLOUT_SERVERS", "rollout server", field,
            "leave vllm_server_url empty and the run starts its own server",
        )  # fmt: skip


def _check_environment_server(config: dict[str, Any], field: str) -> None:
    environment = config.get("environment") or {}
    url = (environment.get("params") or {}).get("base_url") if environment.get("name") == "openenv" else None
    if isinstance(url, str):
        _check_exact_server(
            url, settings.RLVR_ENVIRONMENT_SERVERS, "RLVR_ENVIRONMENT_SERVERS", "OpenEnv environment server", field,
            "set environment.params.base_url to a listed server, or ask the server's administrator to add this one",
        )  # fmt: skip


def _check_exact_server(url: str, listed: list[str], setting: str, what: str, field: str, fix: str) -> None:
    """A server named by its base URL: exactly a listed one (a trailing slash aside), where a judge may be any
    path under a listed prefix."""
    exact = [u for u in listed if urlsplit(u).path.rstrip("/") == urlsplit(url).path.rstrip("/")]
    check_url_on_list(url, exact, setting=setting, what=what, field=field, fix=fix)


def confine_benchmark_config(
    config: dict[str, Any], *, project: Project, resolve: bool = False, field: str = "config"
) -> dict[str, Any]:
    """As ``confine_experiment_config`` for a benchmark config (its ``data`` section)."""
    out = dict(config)
    confiner = _Confiner(project, resolve)
    refused: list[InvalidInput] = []
    try:
        if isinstance(config.get("data"), dict):
            out["data"] = confiner.data(config["data"], f"{field}.data")
    except InvalidInput as err:
        refused.append(err)
    try:
        if isinstance(config.get("verifiers"), list):
            out["verifiers"] = confiner.reward_sources(config["verifiers"], f"{field}.verifiers")
    except InvalidInput as err:
        refused.append(err)
    if refused:
        raise _joined(refused)
    return out


def confine_reward_sources(
    entries: list[Any], *, project: Project, resolve: bool = False, field: str = "config.verifiers"
) -> list[Any]:
    """A ``verifiers`` list (any caller's: saved verifier versions, annotation scoring) checked as a config's are;
    with ``resolve`` its reward models name server folders."""
    return _Confiner(project, resolve).reward_sources(entries, field)


def confine_model(value: str, *, project: Project, resolve: bool = False, field: str = "model") -> str:
    """A model name as a config of ``project`` may give it; with ``resolve`` what the trainer loads."""
    return _Confiner(project, resolve).model(value, field)


def confine_process_model(
    value: Any, *, project: Project, resolve: bool = False, field: str = "model"
) -> str:
    """A step scorer's model as a config of ``project`` may name it (``rm:<id>`` of a PRM version, or a model);
    with ``resolve`` the folder the trainer loads (the reward evaluation's process sources use it)."""
    return _Confiner(project, resolve).process_model(value, field)


def run_config_for_worker(*, run: Run) -> dict[str, Any]:
    """The run's config as the trainer must load it: references resolved to server paths (checked again
    here), written into the run's own folder. ConfigError (shown as it is) if it names what it may not."""
    try:
        config = confine_experiment_config(run.config, project=run.experiment.project, resolve=True)
    except InvalidInput as err:
        raise ConfigError(f"run {run.pk}: {err.message}") from None
    config["checkpoint"]["output_dir"] = run.output_dir or str(Path(settings.RLVR_RUNS_DIR) / f"run-{run.pk}")
    return config


def references(stored: dict[str, Any], resolved: dict[str, Any]) -> dict[str, str]:
    """Server path -> the reference the user wrote, for the data file and model fields that differ between a
    stored config and its ``resolve=True`` copy: error messages name ``dataset:<id>``, not the server path."""
    pairs = [(stored["data"].get("path"), resolved["data"].get("path"))]
    pairs += [
        (stored[s]["name_or_path"], resolved[s]["name_or_path"])
        for s in ("model", "teacher")
        if stored.get(s)
    ]
    pairs += [  # a reward model's folder is shown as the rm:<id> the config named
        ((old.get("params") or {}).get("model"), (new.get("params") or {}).get("model"))
        for old, new in zip(stored.get("verifiers") or [], resolved.get("verifiers") or [], strict=False)
        if isinstance(old, dict) and isinstance(new, dict) and old.get("name") == REWARD_MODEL_SOURCE
    ]
    pairs.append((_scorer_model(stored), _scorer_model(resolved)))  # and a PRM's folder as its rm:<id>
    return {new: old for old, new in pairs if isinstance(old, str) and isinstance(new, str) and old != new}


def _scorer_model(config: dict[str, Any]) -> Any:
    """``process_reward.scorer.params.model`` of a config (None when the section, or the param, is absent)."""
    section = config.get("process_reward")
    scorer = section.get("scorer") if isinstance(section, dict) else None
    params = scorer.get("params") if isinstance(scorer, dict) else None
    return params.get("model") if isinstance(params, dict) else None
