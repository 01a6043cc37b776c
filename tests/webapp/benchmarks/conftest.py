"""Benchmarks on alice's project "lab": the built-in addition suite, small, and stored evaluation results."""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth.models import User

from tests.webapp.benchmarks.helpers import SMALL_BENCHMARK
from webapp.benchmarks.models import Benchmark
from webapp.teams.models import Project


@pytest.fixture
def benchmark(project: Project, alice: User) -> Benchmark:
    from webapp.benchmarks.services import benchmark_create

    return benchmark_create(
        project=project,
        actor=alice,
        name="addition",
        source="builtin",
        builtin="builtin:addition",
        config=dict(SMALL_BENCHMARK),
    )


@pytest.fixture
def no_enqueue(settings: Any) -> None:
    settings.RLVR_ENQUEUE = False
