"""Stored configs name uploaded data files as ``dataset:<id>`` and checkpoints as ``checkpoint:<id>``.

Configs saved before paths were confined (webapp/experiments/config_paths.py) hold the server path of an
upload (``data.path``) or of a checkpoint (an evaluation's ``model_path``); from now on such paths are
refused, so each one that is a file or checkpoint of the same project becomes its reference. Anything else
is left as it was: launching it again says what to use instead.
"""

from __future__ import annotations

from typing import Any

from django.apps.registry import Apps
from django.db import migrations
from django.db.backends.base.schema import BaseDatabaseSchemaEditor

Refs = dict[int, dict[str, str]]  # project id -> server path -> reference


def _rename_data_path(data: Any, refs: dict[str, str]) -> bool:
    if isinstance(data, dict) and data.get("source") == "file" and data.get("path") in refs:
        data["path"] = refs[data["path"]]
        return True
    return False


def _rename_experiment_config(config: Any, refs: dict[str, str]) -> bool:
    if not isinstance(config, dict):
        return False
    changed = _rename_data_path(config.get("data"), refs)
    for spec in (config.get("evaluation") or {}).get("benchmarks") or []:
        if isinstance(spec, dict):
            changed = _rename_data_path(spec.get("data"), refs) or changed
    return changed


def _dataset_refs(apps: Apps) -> Refs:
    refs: Refs = {}
    for pk, project_id, path in apps.get_model("datafiles", "Dataset").objects.values_list(
        "pk", "project_id", "path"
    ):
        refs.setdefault(project_id, {})[path] = f"dataset:{pk}"
    return refs


def _checkpoint_refs(apps: Apps) -> Refs:
    refs: Refs = {}
    rows = apps.get_model("experiments", "Checkpoint").objects.values_list(
        "pk", "run__experiment__project_id", "path"
    )
    for pk, project_id, path in rows:
        refs.setdefault(project_id, {})[path] = f"checkpoint:{pk}"
    return refs


def forwards(apps: Apps, schema_editor: BaseDatabaseSchemaEditor) -> None:
    datasets, checkpoints = _dataset_refs(apps), _checkpoint_refs(apps)
    for experiment in apps.get_model("experiments", "Experiment").objects.all():
        if _rename_experiment_config(experiment.config, datasets.get(experiment.project_id, {})):
            experiment.save(update_fields=["config"])
    for run in apps.get_model("experiments", "Run").objects.select_related("experiment"):
        if _rename_experiment_config(run.config, datasets.get(run.experiment.project_id, {})):
            run.save(update_fields=["config"])
    for benchmark in apps.get_model("benchmarks", "Benchmark").objects.all():
        if isinstance(benchmark.config, dict) and _rename_data_path(
            benchmark.config.get("data"), datasets.get(benchmark.project_id, {})
        ):
            benchmark.save(update_fields=["config"])
    for row in apps.get_model("benchmarks", "EvalRun").objects.select_related("benchmark"):
        project_id = row.benchmark.project_id
        changed = isinstance(row.config, dict) and _rename_data_path(
            row.config.get("data"), datasets.get(project_id, {})
        )
        if row.model_path in checkpoints.get(project_id, {}):
            row.model_path = checkpoints[project_id][row.model_path]
            changed = True
        if changed:
            row.save(update_fields=["config", "model_path"])


class Migration(migrations.Migration):
    dependencies = [
        ("datafiles", "0001_initial"),
        ("experiments", "0002_run_verifier_versions"),
        ("benchmarks", "0001_initial"),
    ]

    operations = [migrations.RunPython(forwards, migrations.RunPython.noop)]
