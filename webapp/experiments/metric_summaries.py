"""One number per run and metric key, for tables that rank runs: the last value, the best raw value, and
the best and last of a trailing moving average, computed in SQL for hundreds of runs at once.

Why a smoothed figure: ``rollout/reward_mean`` is the mean over one step's batch, so its raw maximum over
thousands of steps is mostly the luckiest batch; a run with one noisy spike would rank first. The mean of
the last ``SMOOTHING_WINDOW`` reported values (fewer only when the run has fewer) moves with the run's
level, not its noise, and its best over the run is what the project page and the runs table rank by.

What counts:

- A point whose value is null (the trainer reported NaN or infinity) is no value: it is left out of every
  figure, including the window, which spans the last ``SMOOTHING_WINDOW`` points that have a value.
- The window counts reported points, not step numbers: a key logged every 5 steps is averaged over its
  last 10 reports (50 steps). That keeps evaluation metrics, logged every N steps, smoothed at all.
- ``smooth_max`` / ``smooth_min`` consider only full windows (the first ``SMOOTHING_WINDOW - 1`` points
  average fewer values, so a spike at step 1 would otherwise survive as a "smoothed" best); a run with
  fewer points than the window has one window, all of its points.
- Direction: ``metric_direction`` says whether a key's best is its max or its min (the rule is there).

Both PostgreSQL and SQLite (3.25 or later) run the query: window functions with a ROWS frame, a GROUP BY
over them, CASE inside the aggregates.

A finished run's figures do not change, so ``metric_summaries`` keeps them (``StoredMetricSummary``, one
row per run, key and window) and computes only the runs that are still going or not seen yet: ranking a
project of mostly finished runs reads a row per run instead of every point
(benchmarks/runs_table.py). A stored row is valid while its run is finished at the step it was computed
at; the ingest API deletes a run's rows when it stores metrics (``forget_stored_summaries``), since an
outside run's metrics may arrive after its end.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

from django.db import connections
from django.db.models import QuerySet

from webapp.core.errors import InvalidInput
from webapp.experiments.models import FINISHED_STATUSES, MetricPoint, Run, StoredMetricSummary

Direction = Literal["max", "min"]

SMOOTHING_WINDOW = 10  # reported points in the trailing mean
MAX_SUMMARY_KEYS = 40  # metric keys per request: each costs one pass over every point of every run
MAX_KEY_LENGTH = 200  # MetricPoint.key's max_length

# Words (of a key's last segment, split on anything not a letter or digit) whose metric is better lower.
# Entropy is deliberately not here: in RL on language models low entropy is collapse, which DAPO's
# clip-higher exists to prevent, so "min" would rank collapsed runs best; a column can still choose min.
# A reward source's unscored share and its call time (``reward/<key>_absent_frac``, ``reward/dropped_frac``,
# ``reward/<key>_latency_s``: trainer/step/collect.py) are better lower too.
LOWER_IS_BETTER_WORDS = frozenset(
    {"loss", "kl", "error", "err", "perplexity", "ppl", "time", "seconds", "s", "ms", "memory", "gb", "mb",
     "truncated", "regret", "absent", "dropped", "latency"}
)  # fmt: skip
RATE_WORD = "per"  # "gen_tokens_per_s" is a throughput: higher is better whatever unit follows


def metric_direction(key: str) -> Direction:
    """``"min"`` where a lower value is better, else ``"max"``.

    The rule reads the key's last ``/`` segment as words: ``actor/pg_loss``, ``actor/kl``,
    ``teacher/reverse_kl``, ``perf/step_s``, ``perf/peak_memory_gb``, ``reward/judge_absent_frac`` read min; a rate
    (``perf/gen_tokens_per_s``) and everything else (rewards, accuracies, ``actor/entropy``) read max.

    >>> metric_direction("actor/kl_loss"), metric_direction("perf/train_tokens_per_s")
    ('min', 'max')
    """
    words = {w for w in re.split(r"[^a-z0-9]+", key.rsplit("/", 1)[-1].lower()) if w}
    if RATE_WORD in words:
        return "max"
    return "min" if words & LOWER_IS_BETTER_WORDS else "max"


@dataclass(frozen=True)
class MetricSummary:
    """One run's figures for one key (only values that are numbers count; see the module docstring)."""

    points: int  # points with a value
    last_step: int
    last: float
    max: float
    min: float
    smooth_last: float  # the trailing mean at the last point
    smooth_max: float  # the best full-window trailing mean, reading max
    smooth_min: float

    def best(self, direction: Direction) -> float:
        return self.max if direction == "max" else self.min

    def smooth_best(self, direction: Direction) -> float:
        return self.smooth_max if direction == "max" else self.smooth_min

    def as_dict(self) -> dict[str, Any]:
        return {
            "points": self.points, "last_step": self.last_step, "last": self.last, "max": self.max,
            "min": self.min, "smooth_last": self.smooth_last, "smooth_max": self.smooth_max,
            "smooth_min": self.smooth_min,
        }  # fmt: skip


def check_summary_keys(keys: Sequence[str], *, field: str = "metrics") -> list[str]:
    """The keys, de-duplicated in order; InvalidInput naming ``field`` when there are too many or one is
    too long (each key is a pass over every point, so the count is what bounds the query's cost)."""
    unique = list(dict.fromkeys(k for k in keys if k))
    if len(unique) > MAX_SUMMARY_KEYS:
        message = (
            f"At most {MAX_SUMMARY_KEYS} metric keys at once ({len(unique)} given): choose fewer columns."
        )
        raise InvalidInput(message, {field: [message]})
    long = [k for k in unique if len(k) > MAX_KEY_LENGTH]
    if long:
        message = (
            f"A metric key has at most {MAX_KEY_LENGTH} characters ({long[0][:40]!r}... has {len(long[0])})."
        )
        raise InvalidInput(message, {field: [message]})
    return unique


def metric_summaries(
    *, runs: QuerySet[Run], keys: Sequence[str], window: int = SMOOTHING_WINDOW
) -> dict[int, dict[str, MetricSummary]]:
    """Run id -> key -> summary, for every run of ``runs`` that reported a number for the key: finished
    runs' figures from ``StoredMetricSummary`` where valid, the rest computed (``computed_summaries``) and,
    for finished runs, stored for the next call."""
    keys = check_summary_keys(keys)
    if not keys or window < 1:
        return {}
    state = {
        pk: (step, status in FINISHED_STATUSES)
        for pk, step, status in runs.values_list("pk", "step", "status")
    }
    finished_at = {pk: step for pk, (step, finished) in state.items() if finished}
    out: dict[int, dict[str, MetricSummary]] = {}
    have: dict[int, set[str]] = {}
    stored = StoredMetricSummary.objects.filter(run_id__in=list(finished_at), key__in=keys, window=window)
    for row in stored:
        if row.run_step != finished_at[row.run_id]:
            continue  # computed before a resume: recomputed below
        have.setdefault(row.run_id, set()).add(row.key)
        if row.points:
            out.setdefault(row.run_id, {})[row.key] = _summary_of_row(row)
    missing = [pk for pk in state if len(have.get(pk, ())) < len(keys)]
    if not missing:
        return out
    computed = computed_summaries(runs=Run.objects.filter(pk__in=missing), keys=keys, window=window)
    for run_id in missing:
        for key, summary in computed.get(run_id, {}).items():
            out.setdefault(run_id, {})[key] = summary
    _store(computed, {pk: finished_at[pk] for pk in missing if pk in finished_at}, keys, window)
    return out


def forget_stored_summaries(*, run_id: int) -> None:
    """Drop a run's stored figures: its metrics changed (the ingest API stores them after a run's end too)."""
    StoredMetricSummary.objects.filter(run_id=run_id).delete()


def _summary_of_row(row: StoredMetricSummary) -> MetricSummary:
    figures = (row.last_step, row.last, row.max, row.min, row.smooth_last, row.smooth_max, row.smooth_min)
    assert all(f is not None for f in figures)  # points > 0: every figure was stored
    return MetricSummary(
        points=row.points, last_step=int(row.last_step or 0), last=float(row.last or 0.0),
        max=float(row.max or 0.0), min=float(row.min or 0.0), smooth_last=float(row.smooth_last or 0.0),
        smooth_max=float(row.smooth_max or 0.0), smooth_min=float(row.smooth_min or 0.0),
    )  # fmt: skip


def _store(
    computed: dict[int, dict[str, MetricSummary]], finished_at: dict[int, int], keys: list[str], window: int
) -> None:
    """Keep finished runs' figures, a row with ``points=0`` where the run has no value for a key."""
    rows = []
    for run_id, step in finished_at.items():
        for key in keys:
            found = computed.get(run_id, {}).get(key)
            figures = found.as_dict() if found else {"points": 0}
            rows.append(StoredMetricSummary(run_id=run_id, key=key, window=window, run_step=step, **figures))
    StoredMetricSummary.objects.bulk_create(
        rows,
        batch_size=1000,
        update_conflicts=True,
        unique_fields=["run", "key", "window"],
        update_fields=[
            "run_step",
            "points",
            "last_step",
            "last",
            "max",
            "min",
            "smooth_last",
            "smooth_max",
            "smooth_min",
        ],
    )


def computed_summaries(
    *, runs: QuerySet[Run], keys: Sequence[str], window: int = SMOOTHING_WINDOW
) -> dict[int, dict[str, MetricSummary]]:
    """Run id -> key -> summary computed from the points, for every run of ``runs`` that reported a number.

    Trusts its caller with ``runs`` (already limited to what the user may read). One query: the points
    of those runs and keys, a window pass per (run, key) ordered by step for the trailing mean and the
    position, then one GROUP BY row per (run, key). Its cost is linear in the points read: on
    PostgreSQL 15 about 1.4 s per key for 500 runs of 10,000 steps (5 million points), hence
    ``MAX_SUMMARY_KEYS``.
    """
    keys = check_summary_keys(keys)
    if not keys or window < 1:
        return {}
    db = runs.db
    connection = connections[db]
    quote = connection.ops.quote_name
    run_sql, run_params = runs.order_by().values("pk").query.get_compiler(using=db).as_sql()
    points = quote(MetricPoint._meta.db_table)
    key_col = quote("key")
    full = f"(pos >= {int(window)} OR next_step IS NULL)"  # a full window, or the one window of a short run
    # One named window serves the mean, the position and the next step, so PostgreSQL sorts the points
    # once and computes all three in one pass (a second PARTITION-only COUNT doubled the time); the
    # outer GROUP BY then reads the rows in the order they come.
    sql = f"""
        SELECT run_id, key, COUNT(*),
               MAX(CASE WHEN next_step IS NULL THEN step END),
               MAX(CASE WHEN next_step IS NULL THEN value END),
               MAX(value), MIN(value),
               MAX(CASE WHEN next_step IS NULL THEN smooth END),
               MAX(CASE WHEN {full} THEN smooth END),
               MIN(CASE WHEN {full} THEN smooth END)
        FROM (
            SELECT run_id, {key_col} AS key, step, value,
                   AVG(value) OVER w AS smooth, ROW_NUMBER() OVER w AS pos, LEAD(step) OVER w AS next_step
            FROM {points}
            WHERE run_id IN ({run_sql}) AND {key_col} IN ({", ".join(["%s"] * len(keys))}) AND value IS NOT NULL
            WINDOW w AS (PARTITION BY run_id, {key_col} ORDER BY step
                         ROWS BETWEEN {int(window) - 1} PRECEDING AND CURRENT ROW)
        ) AS windowed
        GROUP BY run_id, key
    """  # names come from the models, numbers are ints, values are parameters
    with connection.cursor() as cursor:
        cursor.execute(sql, [*run_params, *keys])
        rows = cursor.fetchall()
    out: dict[int, dict[str, MetricSummary]] = {}
    for run_id, key, n, last_step, last, high, low, smooth_last, smooth_max, smooth_min in rows:
        out.setdefault(run_id, {})[key] = MetricSummary(
            points=int(n), last_step=int(last_step), last=float(last), max=float(high), min=float(low),
            smooth_last=float(smooth_last), smooth_max=float(smooth_max), smooth_min=float(smooth_min),
        )  # fmt: skip
    return out


def metric_keys_of_runs(*, runs: QuerySet[Run], limit: int = 1000) -> tuple[list[str], bool]:
    """The metric keys any of ``runs`` reported, sorted, at most ``limit``; and whether there were more.

    A plain ``SELECT DISTINCT key`` reads every point (4 s for 15 million); this walks the
    (run, key, step) index instead, jumping from each key of a run to the next one (a "loose index scan"
    as a recursive query): one index probe per run and key, 80 ms for 500 runs.
    """
    db = runs.db
    connection = connections[db]
    quote = connection.ops.quote_name
    run_sql, run_params = runs.order_by().values("pk").query.get_compiler(using=db).as_sql()
    points, key_col = quote(MetricPoint._meta.db_table), quote("key")
    sql = f"""
        WITH RECURSIVE found(run_id, key) AS (
            SELECT chosen.id, (SELECT MIN({key_col}) FROM {points} WHERE run_id = chosen.id)
            FROM {quote(Run._meta.db_table)} AS chosen WHERE chosen.id IN ({run_sql})
            UNION ALL
            SELECT found.run_id,
                   (SELECT MIN({key_col}) FROM {points} WHERE run_id = found.run_id AND {key_col} > found.key)
            FROM found WHERE found.key IS NOT NULL
        )
        SELECT DISTINCT key FROM found WHERE key IS NOT NULL ORDER BY key LIMIT %s
    """  # names come from the models, values are parameters
    with connection.cursor() as cursor:
        cursor.execute(sql, [*run_params, limit + 1])
        keys = [row[0] for row in cursor.fetchall()]
    return keys[:limit], len(keys) > limit


def best_smoothed_per_experiment(
    *, runs: QuerySet[Run], key: str, direction: Direction | None = None
) -> dict[int, float]:
    """Experiment id -> the best full-window trailing mean of ``key`` over its runs among ``runs``."""
    direction = direction or metric_direction(key)
    experiment_of = dict(runs.values_list("pk", "experiment_id"))
    pick = max if direction == "max" else min
    best: dict[int, float] = {}
    for run_id, by_key in metric_summaries(runs=runs, keys=[key]).items():
        value = by_key[key].smooth_best(direction)
        experiment_id = experiment_of[run_id]
        best[experiment_id] = pick(best[experiment_id], value) if experiment_id in best else value
    return best
