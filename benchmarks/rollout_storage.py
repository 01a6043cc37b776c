"""Rollout storage before and after the token store, on PostgreSQL (not a test: timings stay out of tests).

One step of 256 rollouts x 512 tokens with every channel a run records (logprob, old_logprob, ref_logprob,
entropy, advantage, loss_mask), stored:

(a) the old way: per-token arrays inline in the rollout rows (``token_data`` blob + ``tokens`` JSON),
    synchronously in the training step; the old row-building code is copied below, for comparison only;
(b) the new way: the worker's sink (``DjangoRunSink.on_step``) hands the step to its writer thread; timed
    are the trainer's wait (the ``on_step`` call, writer idle as after a real training step) and the
    writer's own time (token object + rows + publish + pruning); also back-to-back calls, where the
    writer is the bottleneck and backpressure makes ``on_step`` wait;
(c) the new way with a retention policy (every 10th step, the newest 10 whole).

Bytes: ``pg_total_relation_size`` of the rollout and metric tables (table, TOAST and indexes, after
``VACUUM FULL`` so deleted rows do not count) and the token store's bytes, per step and scaled to 1,000
steps. Writes ``benchmarks/results/rollout_storage.md`` headed by the git revision:

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/rlvr .venv/bin/python benchmarks/rollout_storage.py

Runs in a throw-away database (Django's test-database machinery: ``test_<name>`` created and dropped) and
a temporary token store folder. Run it on a quiet machine: the writer thread shares the cores.
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "webapp.settings")
os.environ.setdefault("RLVR_ENQUEUE", "0")  # nothing is sent to a worker
os.environ.setdefault("RLVR_DEBUG", "1")
os.environ.setdefault("RLVR_CHANNEL_LAYER", "memory")  # storage is measured, not Redis

STEP_ROLLOUTS, STEP_TOKENS, GROUP_SIZE = 256, 512, 8
REPEATS = 10
RETENTION = {"keep": "every_n_steps", "every_n_steps": 10, "recent_steps": 10}
RETENTION_STEPS = 40
SCALE_STEPS = 1000
TABLES = ("experiments_rollout", "experiments_metricpoint")


def rollout(step: int, group: int, index: int, rng: random.Random) -> Any:
    from trainer.sinks import RolloutRecord

    ids = [rng.randrange(32, 127) for _ in range(STEP_TOKENS)]
    n = STEP_TOKENS
    return RolloutRecord(
        step=step, prompt_id=f"p{group}", group=group, sample_index=index, prompt="What is 17 + 25? " * 8,
        completion="".join(chr(i) for i in ids), finish_reason="length", reward=rng.random(),
        rewards={"math": rng.random(), "format": 1.0}, correct=rng.random() > 0.5,
        details={"math": {"extracted": "42"}}, advantage=rng.gauss(0, 1), token_ids=ids,
        tokens=[chr(i) for i in ids],
        token_values={
            "logprob": [-rng.random() for _ in ids], "old_logprob": [-rng.random() for _ in ids],
            "ref_logprob": [-rng.random() for _ in ids], "entropy": [rng.random() for _ in ids],
            "advantage": [rng.gauss(0, 1)] * n, "loss_mask": [1.0] * n,
        },
    )  # fmt: skip


# --- the old write path, copied from webapp/experiments/services.py before the token store ----------------


def old_rollout_row(run_id: int, step: int, record: Any) -> Any:
    from trainer.sinks import pack_token_arrays
    from webapp.experiments.models import Rollout
    from webapp.experiments.storable import clean_json, clean_text, finite_or_none

    return Rollout(
        run_id=run_id, step=step, prompt_id=clean_text(record.prompt_id), group=record.group,
        sample_index=record.sample_index, prompt=clean_text(record.prompt), completion=clean_text(record.completion),
        answer=None if record.answer is None else clean_text(record.answer), finish_reason=record.finish_reason,
        reward=finite_or_none(record.reward), rewards=clean_json(record.rewards), correct=bool(record.correct),
        details=clean_json(record.details), advantage=finite_or_none(record.advantage), length=len(record.token_ids),
        tokens=[clean_text(t) for t in record.tokens], token_data=pack_token_arrays(record),
    )  # fmt: skip


def old_run_record_step(
    *, run_id: int, step: int, max_steps: int, metrics: dict[str, float], rollouts: list[Any]
) -> None:
    from django.db import transaction

    from webapp.experiments.models import MetricPoint, Rollout, Run
    from webapp.experiments.storable import clean_json, finite_or_none
    from webapp.realtime.publish import publish_run_event

    metric_rows = [
        MetricPoint(run_id=run_id, step=step, key=k, value=finite_or_none(v)) for k, v in metrics.items()
    ]
    rollout_rows = [old_rollout_row(run_id, step, record) for record in rollouts]
    with transaction.atomic():
        MetricPoint.objects.filter(run_id=run_id, step=step).delete()
        Rollout.objects.filter(run_id=run_id, step=step).delete()
        MetricPoint.objects.bulk_create(metric_rows)
        Rollout.objects.bulk_create(rollout_rows, batch_size=128)
        Run.objects.filter(pk=run_id).update(step=step, max_steps=max_steps, phase="", phase_progress={})
        payload = {
            "step": step,
            "max_steps": max_steps,
            "metrics": {r.key: r.value for r in metric_rows},
            "rollouts": [clean_json(r.summary()) for r in rollouts[:32]],
        }
        publish_run_event(run_id=run_id, event="run.step", payload=payload)


# --- measuring -------------------------------------------------------------------------------------------


def database_bytes() -> int:
    """The rollout and metric tables after VACUUM FULL (deleted rows' space reclaimed, GIN lists merged)."""
    from django.db import connection

    with connection.cursor() as cursor:
        total = 0
        for table in TABLES:
            cursor.execute(f"VACUUM FULL {table}")
            cursor.execute("SELECT pg_total_relation_size(%s)", [table])
            total += int(cursor.fetchone()[0])
    return total


def search_indexes(present: bool) -> None:
    """Migration 0007's indexes: dropped for (a), which measures the table as it was before them."""
    import importlib

    from django.db import connection

    indexes = importlib.import_module("webapp.experiments.migrations.0007_rollout_search_indexes").INDEXES
    with connection.cursor() as cursor:
        for name, definition in indexes.items():
            if present:
                cursor.execute(f'CREATE INDEX IF NOT EXISTS "{name}" ON "experiments_rollout" {definition}')
            else:
                cursor.execute(f'DROP INDEX IF EXISTS "{name}"')


def search_index_bytes() -> int:
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT sum(pg_relation_size(indexname::regclass)) FROM pg_indexes "
            "WHERE indexname IN ('rollout_completion_trgm', 'rollout_prompt_trgm', 'rollout_run_prompt_id')"
        )
        return int(cursor.fetchone()[0] or 0)


def empty_tables() -> int:
    from webapp.experiments.models import MetricPoint, Rollout

    Rollout.objects.all().delete()
    MetricPoint.objects.all().delete()
    return database_bytes()


def ms(seconds: list[float]) -> str:
    return f"{min(seconds) * 1000:.1f} / {statistics.median(seconds) * 1000:.1f}"


def mb(n: float) -> str:
    return f"{n / 1e6:,.1f} MB"


def measure(records: list[Any], metrics: dict[str, float], new_run: Callable[..., Any]) -> dict[str, Any]:
    from trainer.sinks import StepReport
    from webapp.experiments.models import Rollout
    from webapp.experiments.token_store import run_prefix, token_store
    from workers.sink import DjangoRunSink

    out: dict[str, Any] = {}

    # (a) the old way, on the table as it was (without migration 0007's search indexes)
    search_indexes(present=False)
    base = empty_tables()
    run = new_run()
    times = []
    for step in range(1, REPEATS + 1):
        started = time.perf_counter()
        old_run_record_step(run_id=run.pk, step=step, max_steps=10_000, metrics=metrics, rollouts=records)
        times.append(time.perf_counter() - started)
    out["old_ms"] = ms(times)
    out["old_db_per_step"] = (database_bytes() - base) / REPEATS

    # (b) the new way, through the worker's sink
    search_indexes(present=True)
    base = empty_tables() - search_index_bytes()
    run = new_run()
    sink = DjangoRunSink(run.pk)
    critical, background = [], []
    for step in range(1, REPEATS + 1):
        sink.flush()  # the writer is idle, as after a real training step of a few seconds
        busy = sink.writer.busy_s
        started = time.perf_counter()
        sink.on_step(
            StepReport(step=step, max_steps=10_000, metrics=metrics, rollouts=records, elapsed_s=0.0)
        )
        critical.append(time.perf_counter() - started)
        sink.flush()
        background.append(sink.writer.busy_s - busy)
    back_to_back = []
    for step in range(REPEATS + 1, 2 * REPEATS + 1):
        started = time.perf_counter()
        sink.on_step(
            StepReport(step=step, max_steps=10_000, metrics=metrics, rollouts=records, elapsed_s=0.0)
        )
        back_to_back.append(time.perf_counter() - started)
    sink.close()
    steps_written = 2 * REPEATS
    assert Rollout.objects.filter(run=run).count() == STEP_ROLLOUTS * steps_written
    out["new_critical_ms"], out["new_writer_ms"], out["new_back_to_back_ms"] = (
        ms(critical),
        ms(background),
        ms(back_to_back),
    )
    out["new_db_per_step"] = (database_bytes() - base) / steps_written
    out["new_search_index_per_step"] = search_index_bytes() / steps_written
    out["new_store_per_step"] = token_store().total_bytes(run_prefix(run.pk)) / steps_written

    # (c) the new way with a retention policy
    base = empty_tables() - search_index_bytes()
    run = new_run(retention=RETENTION)
    sink = DjangoRunSink(run.pk)
    for step in range(1, RETENTION_STEPS + 1):
        sink.on_step(
            StepReport(step=step, max_steps=10_000, metrics=metrics, rollouts=records, elapsed_s=0.0)
        )
    sink.close()
    kept = sorted(set(Rollout.objects.filter(run=run).values_list("step", flat=True)))
    out["retention_kept_steps"] = kept
    out["retention_db"] = database_bytes() - base
    out["retention_store"] = token_store().total_bytes(run_prefix(run.pk))
    return out


def kept_after(steps: int) -> int:
    """How many steps of a ``steps``-step run keep their rollouts under RETENTION."""
    every, recent = RETENTION["every_n_steps"], RETENTION["recent_steps"]
    return len({s for s in range(1, steps + 1) if s % every == 0 or s > steps - recent})


def revision() -> str:
    head = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"], cwd=REPO, capture_output=True, text=True
    ).stdout.strip()
    dirty = subprocess.run(
        ["git", "status", "--porcelain", "--untracked-files=no"], cwd=REPO, capture_output=True, text=True
    ).stdout.strip()
    return head + (" with uncommitted changes" if dirty else "")


def report(out: dict[str, Any]) -> str:
    per_step_old = out["old_db_per_step"]
    per_step_new = out["new_db_per_step"] + out["new_store_per_step"]
    kept = out["retention_kept_steps"]
    per_kept_db, per_kept_store = out["retention_db"] / len(kept), out["retention_store"] / len(kept)
    scaled_kept = kept_after(SCALE_STEPS)
    load = os.getloadavg()
    return "\n".join(
        [
            "# Rollout storage: before and after the token store",
            "",
            f"Revision {revision()}; `benchmarks/rollout_storage.py` (docs/rollout_storage.md). PostgreSQL, local token",
            f"store folder, {os.cpu_count()} cores (load average {load[0]:.2f} at the end). One step = {STEP_ROLLOUTS} "
            f"rollouts x {STEP_TOKENS} tokens, six channels recorded, 20 metrics. Times: min / median of {REPEATS} steps.",
            "",
            "## Time per step",
            "",
            "| write | trainer waits (ms) | background writer (ms) |",
            "| --- | ---: | ---: |",
            f"| (a) old: inline blobs, synchronous `run_record_step` (no search indexes) | {out['old_ms']} | — |",
            f"| (b) new: `DjangoRunSink.on_step`, writer idle | {out['new_critical_ms']} | {out['new_writer_ms']} |",
            f"| (b) new: back-to-back steps (writer saturated, backpressure) | {out['new_back_to_back_ms']} | |",
            "",
            "## Bytes",
            "",
            "| write | PostgreSQL per step | token store per step | per 1,000 steps |",
            "| --- | ---: | ---: | ---: |",
            f"| (a) old | {mb(per_step_old)} | — | {mb(per_step_old * SCALE_STEPS)} |",
            f"| (b) new, keep all | {mb(out['new_db_per_step'])} | {mb(out['new_store_per_step'])} | "
            f"{mb(per_step_new * SCALE_STEPS)} ({mb(out['new_db_per_step'] * SCALE_STEPS)} in PostgreSQL) |",
            f"| (c) new, {RETENTION} | {mb(per_kept_db)} per kept step | {mb(per_kept_store)} per kept step | "
            f"{mb((per_kept_db + per_kept_store) * scaled_kept)} ({scaled_kept} of {SCALE_STEPS} steps kept) |",
            "",
            f"Of (b)'s PostgreSQL bytes, {mb(out['new_search_index_per_step'])} a step are the search indexes of migration",
            "0007 (trigram indexes of prompts and completions; this benchmark's completions are random characters, the",
            "worst case for them); (a) is measured without them, as the table was. The token store's objects are",
            "zlib level 1; PostgreSQL compressed the old inline blobs itself (TOAST), hence (a)'s smaller-than-raw size.",
            "",
            f"(c) ran {RETENTION_STEPS} steps and kept steps {kept}; its per-1,000 figure is the bytes per kept step",
            f"times the {scaled_kept} steps the policy keeps of a {SCALE_STEPS}-step run. PostgreSQL sizes are",
            "`pg_total_relation_size` of the rollout and metric tables (with TOAST and indexes, the trigram",
            "indexes included) after `VACUUM FULL`: the space autovacuum lets the table reuse.",
            "",
        ]
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=REPO / "benchmarks" / "results" / "rollout_storage.md")
    args = parser.parse_args()

    import django

    django.setup()
    from django.conf import settings
    from django.db import connection
    from django.test.utils import setup_databases, teardown_databases

    if connection.vendor != "postgresql":
        print("set DATABASE_URL=postgres://... : the benchmark is about PostgreSQL", file=sys.stderr)
        return 2
    rng = random.Random(0)
    records = [rollout(1, g, i, rng) for g in range(STEP_ROLLOUTS // GROUP_SIZE) for i in range(GROUP_SIZE)]
    metrics = {f"bench/key_{k}": rng.random() for k in range(20)}
    with tempfile.TemporaryDirectory(prefix="rollout-tokens-") as store:
        settings.RLVR_TOKEN_STORE = store
        old_config = setup_databases(verbosity=0, interactive=False)
        try:
            out = measure(records, metrics, new_run_factory())
        finally:
            teardown_databases(old_config, verbosity=0)
    text = report(out)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(text, encoding="utf-8")
    print(text)
    return 0


def new_run_factory() -> Callable[..., Any]:
    from django.contrib.auth import get_user_model

    from webapp.experiments.services import experiment_create, run_launch
    from webapp.teams.services import project_create

    user = get_user_model().objects.create_user("bench", password="bench-password-123")
    project = project_create(name="bench", owner=user)
    experiment = experiment_create(
        project=project, actor=user, name="bench", config={"training": {"max_steps": 10_000}}
    )

    def new_run(retention: dict[str, Any] | None = None) -> Any:
        return run_launch(experiment=experiment, actor=user, retention=retention)

    return new_run


if __name__ == "__main__":
    sys.exit(main())
