"""A run's headline: greedy accuracy on a fixed held-out set, before training and now.

A benchmark with ``greedy: true`` (e.g. ``builtin:chain_arithmetic``, which the demo evaluates at step 0,
every 50 steps and at the end) reports ``eval/<benchmark>/accuracy (greedy)``: the figure RLVR papers and the
README quote ("0.09 -> 0.25"). The run page shows it above the charts (templates/pages/run_detail.html,
static/js/run.js keeps it live). The server's entries come from the run's config, so the page says what the
run will measure before the first point; run.js adds one for a greedy key only the metrics name (a benchmark
file's). Torch-free.
"""

from __future__ import annotations

from typing import Any, TypedDict

from trainer.errors import RLVRError
from trainer.evaluation.config import GREEDY_ACCURACY, BenchmarkConfig, benchmark_from_dict
from trainer.evaluation.suite import BUILTIN_PREFIX, builtin_benchmark
from webapp.experiments.models import MetricPoint, Run

HEADLINE_SUFFIX = "/" + GREEDY_ACCURACY


class HeadlinePoint(TypedDict):
    step: int
    value: float | None


class Headline(TypedDict):
    key: str  # eval/<benchmark>/accuracy (greedy)
    benchmark: str
    problems: int | None  # how many held-out problems; None when the config does not say (a benchmark file)
    schedule: str  # when the run evaluates, for people: "before training, every 50 steps and at the end"
    first: HeadlinePoint | None
    last: HeadlinePoint | None
    summary: str  # "0.086 → 0.268 (step 0 → 200)", as headlineSummary in static/js/run.js writes it


def _planned(evaluation: dict[str, Any]) -> list[BenchmarkConfig]:
    """The config's greedy benchmarks that can be read without touching files (built-ins and inline ones);
    one the web side cannot read gives none (run.js still shows what the metrics hold)."""
    planned = []
    for spec in evaluation.get("benchmarks") or []:
        try:
            if isinstance(spec, str) and spec.startswith(BUILTIN_PREFIX):
                bench = builtin_benchmark(spec)
            elif isinstance(spec, dict):
                bench = benchmark_from_dict(spec)
            else:
                continue
        except RLVRError:  # ConfigError, whatever was wrong with it
            continue
        if bench.greedy:
            planned.append(bench)
    return planned


def _problems(bench: BenchmarkConfig, max_problems: Any) -> int | None:
    """How many problems each evaluation reads; None for a benchmark file (its length is the file's)."""
    if bench.data.source == "file":
        return None
    limits = [bench.data.size, bench.max_problems, max_problems if isinstance(max_problems, int) else None]
    return min(n for n in limits if n is not None)


def _schedule(evaluation: dict[str, Any]) -> str:
    parts = []
    if evaluation.get("eval_at_start"):
        parts.append("before training")
    every = evaluation.get("eval_every")
    if isinstance(every, int) and every > 0:
        parts.append(f"every {every} step{'s' if every != 1 else ''}")
    if evaluation.get("eval_at_end"):
        parts.append("at the end")
    return " and ".join(", ".join(parts).rsplit(", ", 1)) if parts else ""


def _value(point: HeadlinePoint) -> str:
    return "—" if point["value"] is None else f"{point['value']:.3f}"


def headline_summary(first: HeadlinePoint | None, last: HeadlinePoint | None, schedule: str) -> str:
    """The figures after "Greedy accuracy on N held-out problems:"; mirrored by headlineSummary in run.js."""
    if first is None or last is None:
        return f"not measured yet ({schedule})" if schedule else "not measured yet"
    if first["step"] == last["step"]:
        return f"{_value(first)} at step {first['step']}"
    return f"{_value(first)} → {_value(last)} (step {first['step']} → {last['step']})"


def run_headlines(*, run: Run) -> list[Headline]:
    """One entry per greedy benchmark in the run's config, with its first and latest stored value (None
    before it). Only those keys are read (the run/key index), never the run's other points; a greedy key the
    config does not name (a benchmark file's) gets its entry on the page from the metrics it loads."""
    config = run.config if isinstance(run.config, dict) else {}
    evaluation = config.get("evaluation")
    if not isinstance(evaluation, dict):
        return []
    entries: dict[str, Headline] = {}
    for bench in _planned(evaluation):
        key = f"eval/{bench.name}{HEADLINE_SUFFIX}"
        entries[key] = Headline(
            key=key,
            benchmark=bench.name,
            problems=_problems(bench, evaluation.get("max_problems")),
            schedule=_schedule(evaluation),
            first=None,
            last=None,
            summary="",
        )
    points = MetricPoint.objects.filter(run=run, key__in=list(entries)).order_by("key", "step")
    for key, step, value in points.values_list("key", "step", "value") if entries else []:
        entry = entries[key]
        entry["last"] = HeadlinePoint(step=step, value=value)
        entry["first"] = entry["first"] or entry["last"]
    for entry in entries.values():
        entry["summary"] = headline_summary(entry["first"], entry["last"], entry["schedule"])
    return list(entries.values())
