"""The results table's CSV goes through the one CSV writer of every export (webapp/core/csv_export.py): a
benchmark name or model label that a spreadsheet would run as a formula arrives as text."""

from __future__ import annotations

import csv
import io
from collections.abc import Callable

from django.contrib.auth.models import User
from django.utils import timezone
from rest_framework.test import APIClient

from tests.webapp.benchmarks.helpers import SMALL_BENCHMARK
from webapp.benchmarks.models import EvalRun
from webapp.experiments.models import Experiment
from webapp.teams.models import Project

Api = Callable[[User | None], APIClient]


def test_a_benchmark_named_like_a_formula_is_exported_as_text(
    api: Api, project: Project, alice: User, experiment: Experiment
) -> None:
    from webapp.benchmarks.services import benchmark_create

    benchmark = benchmark_create(
        project=project,
        actor=alice,
        name="@SUM(1+1)",
        source="builtin",
        builtin="builtin:addition",
        config=dict(SMALL_BENCHMARK),
    )
    EvalRun.objects.create(
        benchmark=benchmark, target_kind="base", experiment=experiment, model_path="m",
        label='=HYPERLINK("http://x")', config=benchmark.config, status="succeeded",
        metrics={"pass@1": 0.5}, ci={"pass@1": [0.4, 0.6]}, finished_at=timezone.now(),
    )  # fmt: skip
    response = api(alice).get(f"/api/projects/{project.pk}/benchmark-results/", {"export": "csv"})
    assert response.status_code == 200
    rows = list(csv.reader(io.StringIO(response.content.decode())))
    assert rows[0][3:] == ["'@SUM(1+1) pass@1", "'@SUM(1+1) pass@1 ci_low", "'@SUM(1+1) pass@1 ci_high"]
    assert rows[1] == ['\'=HYPERLINK("http://x")', "base", "", "0.5", "0.4", "0.6"]
