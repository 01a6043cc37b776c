"""The database side of a run, timed on PostgreSQL (not a test; DESIGN.md keeps timings out of tests).

1. ``run_record_step`` for one step of 256 rollouts x 512 tokens (metrics + packed per-token arrays, one
   transaction, then the realtime publish), median of 5 steps;
2. ``GET /api/runs/<id>/metrics/`` for a 10,000-step run with 20 keys (all keys; downsampled to 1,000
   points per key with min/max kept, returned as columns), and the selector alone, median of 5;
3. ``GET /api/runs/<id>/rollouts/<id>/`` for one rollout of 8,192 tokens, median of 5.

Runs in a throw-away database (Django's test-database machinery: ``test_<name>`` created and dropped):

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/rlvr .venv/bin/python benchmarks/write_path.py

The publish goes to the configured channel layer (Redis at REDIS_URL; ``RLVR_CHANNEL_LAYER=memory`` to
leave Redis out).
"""

from __future__ import annotations

import math
import os
import random
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "webapp.settings")
os.environ.setdefault("RLVR_ENQUEUE", "0")  # nothing is sent to a worker
os.environ.setdefault("RLVR_DEBUG", "1")

REPEATS = 5
STEP_ROLLOUTS, STEP_TOKENS = 256, 512
LONG_RUN_STEPS, LONG_RUN_KEYS = 10_000, 20
LONG_ROLLOUT_TOKENS = 8_192


def median_ms(fn: Callable[[], Any], repeats: int = REPEATS) -> float:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append((time.perf_counter() - start) * 1000)
    return statistics.median(times)


def rollout(step: int, group: int, index: int, n_tokens: int, rng: random.Random) -> Any:
    from trainer.sinks import RolloutRecord

    ids = [rng.randrange(32, 127) for _ in range(n_tokens)]
    return RolloutRecord(
        step=step,
        prompt_id=f"p{group}",
        group=group,
        sample_index=index,
        prompt="What is 17 + 25? " * 8,
        completion="".join(chr(i) for i in ids),
        finish_reason="length",
        reward=rng.random(),
        rewards={"math": rng.random(), "format": 1.0},
        correct=rng.random() > 0.5,
        details={"math": {"extracted": "42"}},
        advantage=rng.gauss(0, 1),
        token_ids=ids,
        tokens=[chr(i) for i in ids],
        token_values={
            "logprob": [-rng.random() for _ in ids],
            "old_logprob": [-rng.random() for _ in ids],
            "entropy": [rng.random() for _ in ids],
            "advantage": [rng.gauss(0, 1)] * n_tokens,
            "loss_mask": [1.0] * n_tokens,
        },
    )


def main() -> int:
    import django

    django.setup()
    from django.db import connection
    from django.test.utils import setup_databases, teardown_databases

    if connection.vendor != "postgresql":
        print("set DATABASE_URL=postgres://... : the benchmark is about PostgreSQL", file=sys.stderr)
        return 2
    old_config = setup_databases(verbosity=0, interactive=False)
    try:
        rows = run_benchmarks()
    finally:
        teardown_databases(old_config, verbosity=0)
    width = max(len(name) for name, _, _ in rows)
    print(f"\n{'measurement'.ljust(width)}  {'median ms':>10}  target")
    for name, ms, target in rows:
        print(f"{name.ljust(width)}  {ms:>10.1f}  {target}")
    return 0


def run_benchmarks() -> list[tuple[str, float, str]]:
    from django.conf import settings
    from django.contrib.auth import get_user_model
    from rest_framework.test import APIClient

    from webapp.accounts.tokens import issue_token
    from webapp.experiments.models import MetricPoint, Rollout
    from webapp.experiments.selectors import MAX_METRIC_POINTS, metrics_for_run
    from webapp.experiments.services import experiment_create, run_launch, run_record_step
    from webapp.teams.services import project_create

    settings.ALLOWED_HOSTS = [*settings.ALLOWED_HOSTS, "testserver"]
    rng = random.Random(0)
    user = get_user_model().objects.create_user("bench", password="bench-password-123")
    project = project_create(name="bench", owner=user)
    experiment = experiment_create(
        project=project, actor=user, name="bench", config={"training": {"max_steps": 10_000}}
    )
    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION=f"Token {issue_token(user).token}")
    results: list[tuple[str, float, str]] = []

    # 1. one step of 256 x 512 tokens
    run = run_launch(experiment=experiment, actor=user)
    steps = [
        [rollout(s, g, i, STEP_TOKENS, rng) for g in range(STEP_ROLLOUTS // 8) for i in range(8)]
        for s in range(1, 6)
    ]
    metrics = {f"bench/key_{k}": rng.random() for k in range(LONG_RUN_KEYS)}
    pending = iter(enumerate(steps, start=1))

    def record_next() -> None:
        step, records = next(pending)
        run_record_step(run_id=run.pk, step=step, max_steps=10_000, metrics=metrics, rollouts=records)

    results.append(
        (
            f"run_record_step: {STEP_ROLLOUTS} rollouts x {STEP_TOKENS} tokens",
            median_ms(record_next),
            "well under a step",
        )
    )
    assert Rollout.objects.filter(run=run).count() == STEP_ROLLOUTS * REPEATS

    # 2. metrics of a 10,000-step run with 20 keys
    long_run = run_launch(experiment=experiment, actor=user)
    MetricPoint.objects.bulk_create(
        (
            MetricPoint(
                run=long_run, step=s, key=f"bench/key_{k}", value=math.sin(s / 50) + rng.random() * 0.1
            )
            for s in range(1, LONG_RUN_STEPS + 1)
            for k in range(LONG_RUN_KEYS)
        ),
        batch_size=5000,
    )
    long_run.step = LONG_RUN_STEPS
    long_run.save(update_fields=["step"])
    url = f"/api/runs/{long_run.pk}/metrics/"

    def get_metrics() -> None:
        response = api.get(url)
        assert response.status_code == 200, response.content[:200]
        series = response.json()["metrics"]
        assert len(series) == LONG_RUN_KEYS
        assert len(series["bench/key_0"]["step"]) == len(series["bench/key_0"]["max"]) == MAX_METRIC_POINTS

    results.append(
        (f"GET metrics: {LONG_RUN_STEPS} steps x {LONG_RUN_KEYS} keys (API)", median_ms(get_metrics), "< 200")
    )
    results.append(
        (
            "  metrics_for_run selector alone",
            median_ms(lambda: metrics_for_run(run=long_run)),
            "",
        )
    )
    three = ",".join(f"bench/key_{k}" for k in range(3))
    results.append(
        (
            f"GET metrics: 3 keys, since_step={LONG_RUN_STEPS - 100} (API)",
            median_ms(lambda: api.get(url, {"keys": three, "since_step": str(LONG_RUN_STEPS - 100)})),
            "",
        )
    )

    # 3. one rollout of 8k tokens
    single = run_launch(experiment=experiment, actor=user)
    run_record_step(
        run_id=single.pk,
        step=1,
        max_steps=1,
        metrics={},
        rollouts=[rollout(1, 0, 0, LONG_ROLLOUT_TOKENS, rng)],
    )
    rollout_id = Rollout.objects.get(run=single).pk
    detail = f"/api/runs/{single.pk}/rollouts/{rollout_id}/"

    def get_rollout() -> None:
        response = api.get(detail)
        assert response.status_code == 200, response.content[:200]

    results.append(
        (f"GET one rollout with {LONG_ROLLOUT_TOKENS} tokens (API)", median_ms(get_rollout), "< 100")
    )
    return results


if __name__ == "__main__":
    sys.exit(main())
