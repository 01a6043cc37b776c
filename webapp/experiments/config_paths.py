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

from django.conf import settings

from trainer.errors import ConfigError
from trainer.methods.axes import AXES
from webapp.core.errors import InvalidInput
from webapp.core.paths import (
    CHECKPOINT_PREFIX,
    DATASET_PREFIX,
    TINY_PREFIX,
    check_tiny_name,
    model_folder,
    parse_reference,
    refuse_model,
)
from webapp.datafiles.models import Dataset
from webapp.experiments.models import Checkpoint, Run
from webapp.experiments.selectors import checkpoint_has_files
from webapp.teams.models import Project

BUILTIN_BENCHMARK_PREFIX = "builtin:"  # trainer/evaluation/suite.py's BUILTIN_PREFIX


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
            return (
                {**spec, "data": self.data(spec["data"], f"{field}.data")}
                if isinstance(spec.get("data"), dict)
                else spec
            )
        if isinstance(spec, str) and spec.startswith(BUILTIN_BENCHMARK_PREFIX):
            return spec
        message = (
            f"{field.removeprefix('config.')} {spec!r} is not a built-in benchmark: a config from the web may name "
            f"built-ins ({BUILTIN_BENCHMARK_PREFIX}addition, ...) or inline benchmarks whose data.path is "
            f"{DATASET_PREFIX}<id>, not files on the server"
        )
        raise InvalidInput(message, {field: [message]})


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
    if rubric:
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
    attempt(lambda: _check_rollout_server(config, f"{field}.rollout.vllm_server_url"))
    if refused:
        fields = {path: messages for err in refused for path, messages in err.fields.items()}
        more = f" (and {len(refused) - 1} more)" if len(refused) > 1 else ""
        raise InvalidInput(refused[0].message + more, fields)
    return out


def _check_rollout_server(config: dict[str, Any], field: str) -> None:
    url = (config.get("rollout") or {}).get("vllm_server_url")
    if not url:
        return
    allowed = [u.rstrip("/") for u in settings.RLVR_ROLLOUT_SERVERS]
    if url.rstrip("/") not in allowed:
        listed = ", ".join(allowed) or "none are configured"
        message = (
            f"rollout server {url!r} is not one this deployment lists in RLVR_ROLLOUT_SERVERS ({listed}); "
            "leave vllm_server_url empty and the run starts its own server"
        )
        raise InvalidInput(message, {field: [message]})


def confine_benchmark_config(
    config: dict[str, Any], *, project: Project, resolve: bool = False, field: str = "config"
) -> dict[str, Any]:
    """As ``confine_experiment_config`` for a benchmark config (its ``data`` section)."""
    out = dict(config)
    if isinstance(config.get("data"), dict):
        out["data"] = _Confiner(project, resolve).data(config["data"], f"{field}.data")
    return out


def confine_model(value: str, *, project: Project, resolve: bool = False, field: str = "model") -> str:
    """A model name as a config of ``project`` may give it; with ``resolve`` what the trainer loads."""
    return _Confiner(project, resolve).model(value, field)


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
    return {new: old for old, new in pairs if isinstance(old, str) and isinstance(new, str) and old != new}
