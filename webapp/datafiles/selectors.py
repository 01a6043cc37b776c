"""Reads of a project's data files: the list, the experiment form's choices, and who uses each file.

A config names a dataset only as the string ``dataset:<id>`` (``data.path``, an inline benchmark's
``data.path``, a method's data-file parameter such as a prompt sampler's ``prior_file``), so "used by"
is found in the config's JSON text: the quoted reference ``"dataset:<id>"`` cannot match another id.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from django.db.models import Q, QuerySet, TextField
from django.db.models.functions import Cast
from django.shortcuts import get_object_or_404

from webapp.core.paths import DATASET_PREFIX
from webapp.datafiles.models import Dataset, dataset_reference
from webapp.teams.models import Project
from webapp.teams.permissions import READ, require_role
from webapp.teams.selectors import AnyUser

DATASET_CHOICES_LIMIT = 200  # the experiment form's picker; the API lists every dataset
DATASET_PAGE_LIMIT = 500  # rows on the datasets page
_REFERENCE = re.compile(r'"' + re.escape(DATASET_PREFIX) + r'(\d+)"')


@dataclass(frozen=True)
class UsedBy:
    id: int
    name: str


@dataclass(frozen=True)
class DatasetUsage:
    experiments: list[UsedBy]  # whose current config names the dataset
    runs: list[UsedBy]  # runs launched with a config that named it (their experiment may have moved on)
    benchmarks: list[UsedBy]

    @property
    def in_use(self) -> bool:
        return bool(self.experiments or self.runs or self.benchmarks)

    def describe(self) -> str:
        """``experiment 'a', run #4 and benchmark 'b'`` (the first few of each), for a refusal message."""
        parts = [f"experiment {e.name!r}" for e in self.experiments[:5]]
        parts += [f"run #{r.id} ({r.name})" for r in self.runs[:5]]
        parts += [f"benchmark {b.name!r}" for b in self.benchmarks[:5]]
        return ", ".join(parts[:-1]) + (" and " if len(parts) > 1 else "") + parts[-1] if parts else "nothing"


def datasets_for_project(*, project: Project) -> QuerySet[Dataset]:
    return Dataset.objects.filter(project=project)


def dataset_get_for_user(*, dataset_id: int, user: AnyUser) -> Dataset:
    """The dataset if ``user`` may read its project; 404 for an outsider, as for every project object."""
    dataset = get_object_or_404(Dataset.objects.select_related("project", "created_by"), pk=dataset_id)
    require_role(project=dataset.project, user=user, minimum=READ)
    return dataset


def dataset_choices(*, project: Project) -> list[dict[str, Any]]:
    """The project's datasets for a picker (the experiment form), newest first, at most DATASET_CHOICES_LIMIT."""
    rows = datasets_for_project(project=project).order_by("-created_at", "-id")[:DATASET_CHOICES_LIMIT]
    return [
        {
            "id": d.pk, "ref": dataset_reference(d), "name": d.name, "rows": d.rows,
            "prompt_field": d.prompt_field, "answer_field": d.answer_field or None,
        }
        for d in rows
    ]  # fmt: skip


def _naming(queryset: QuerySet[Any], reference: str) -> QuerySet[Any]:
    return queryset.annotate(config_text=Cast("config", TextField())).filter(
        config_text__contains=f'"{reference}"'
    )


def dataset_usage(*, dataset: Dataset) -> DatasetUsage:
    """Every experiment, run and benchmark of the project that names ``dataset`` (each list bounded)."""
    from webapp.benchmarks.models import Benchmark
    from webapp.experiments.models import Experiment, Run

    reference, project = dataset_reference(dataset), dataset.project
    experiments = _naming(Experiment.objects.filter(project=project), reference).order_by("name")[:50]
    runs = _naming(Run.objects.filter(experiment__project=project), reference).select_related("experiment")
    benchmarks = (
        Benchmark.objects.filter(project=project)
        .annotate(config_text=Cast("config", TextField()))
        .filter(Q(dataset=dataset) | Q(config_text__contains=f'"{reference}"'))
    )
    return DatasetUsage(
        experiments=[UsedBy(e.pk, e.name) for e in experiments],
        runs=[UsedBy(r.pk, r.experiment.name) for r in runs.order_by("-id")[:50]],
        benchmarks=[UsedBy(b.pk, b.name) for b in benchmarks.order_by("name")[:50]],
    )


def experiments_by_dataset(*, project: Project) -> dict[int, list[UsedBy]]:
    """Dataset id -> the experiments whose current config names it, in one query for the whole project."""
    from webapp.experiments.models import Experiment

    found: dict[int, list[UsedBy]] = {}
    rows = (
        Experiment.objects.filter(project=project)
        .annotate(config_text=Cast("config", TextField()))
        .filter(config_text__contains=f'"{DATASET_PREFIX}')
        .order_by("name", "id")
        .values_list("pk", "name", "config_text")
    )
    for pk, name, text in rows:
        for dataset_id in dict.fromkeys(int(m) for m in _REFERENCE.findall(text)):
            found.setdefault(dataset_id, []).append(UsedBy(pk, name))
    return found


def datasets_page(*, project: Project) -> list[dict[str, Any]]:
    """The datasets page's rows: each dataset with the experiments that use it (newest dataset first)."""
    users = experiments_by_dataset(project=project)
    rows = datasets_for_project(project=project).select_related("created_by").order_by("-created_at", "-id")
    return [
        {"dataset": d, "ref": dataset_reference(d), "experiments": users.get(d.pk, [])}
        for d in rows[:DATASET_PAGE_LIMIT]
    ]
