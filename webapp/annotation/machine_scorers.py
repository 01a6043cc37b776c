"""Every machine score the platform holds for a task's items, and any one scorer's agreement with people.

Where machine scores come from (nothing here scores anything; scoring jobs do, scoring_jobs.py):

- training time: the rollout's total ``reward`` and its ``correct`` verdict, snapshotted on the item;
- reward components: the rollout's (or benchmark sample's) per-verifier ``rewards``, read live through the
  item's rollout (an annotated rollout is never pruned, docs/rollout_storage.md) or its sample;
- the task rubric's rule/judge scores recorded in training (``AnnotationItem.machine_scores``);
- scoring jobs of this task: a saved verifier version or a rubric's rule criteria run over the items by
  a worker (``ItemScore``).

A verification rescore (webapp/verification) keeps only the verdicts that changed, at most a thousand,
so it does not say what every item scored and is not offered as a scorer; a scoring job is.

Scorer keys: ``reward``, ``correct``, ``component:<key>``, ``criterion:<name>``, ``job:<id>:<key>``.
People's side: the mean of the submitted scores of one criterion, or ``overall`` (each person's weighted
mean of the criteria, each normalised by its scale, as the rubric's weighted sum does). Both sides are
put on a 0-1 scale where their scale is known, so alpha compares like with like.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any

from webapp.annotation.agreement import scorer_vs_people
from webapp.annotation.models import (
    AnnotationItem,
    AnnotationTask,
    Assignment,
    AssignmentStatus,
    ItemScore,
    ScorerKind,
    ScoringJob,
    ScoringStatus,
    SourceKind,
)
from webapp.benchmarks.models import EvalSample
from webapp.core.errors import InvalidInput
from webapp.experiments.models import Rollout

OVERALL = "overall"
GROUPS = ("Training time", "Reward components", "Scored for this task")


@dataclass(frozen=True)
class MachineScorer:
    key: str
    label: str
    group: str  # one of GROUPS: the picker's <optgroup>
    low: float | None  # the scorer's scale when known (scores are normalised to 0-1 by it); None: as stored
    high: float | None
    items: int  # items of the task with a score from it

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


MachineTable = tuple[list[MachineScorer], dict[str, dict[int, float]]]  # scorers, key -> item id -> score


def _number(value: Any) -> float | None:
    if isinstance(value, bool):
        return float(value)
    if not isinstance(value, int | float) or math.isnan(value) or math.isinf(value):
        return None
    return float(value)


def _components(items: Sequence[Mapping[str, Any]]) -> dict[int, dict[str, Any]]:
    """item id -> the per-verifier rewards of its rollout or benchmark sample (empty when it is gone)."""
    rollout_of = {
        i["pk"]: i["rollout_id"] for i in items if i["source_kind"] == SourceKind.RUN and i["rollout_id"]
    }
    sample_of = {
        i["pk"]: i["source"].get("sample") for i in items if i["source_kind"] == SourceKind.BENCHMARK
    }
    rollouts = dict(Rollout.objects.filter(pk__in=set(rollout_of.values())).values_list("pk", "rewards"))
    ids = {s for s in sample_of.values() if isinstance(s, int)}
    samples = dict(EvalSample.objects.filter(pk__in=ids).values_list("pk", "rewards"))
    found = {item: rollouts.get(r, {}) for item, r in rollout_of.items()}
    found.update({item: samples.get(s, {}) if isinstance(s, int) else {} for item, s in sample_of.items()})
    return found


def machine_table(*, task: AnnotationTask, item_ids: list[int] | None = None) -> MachineTable:
    """The scorers with at least one score for the task's items (or only ``item_ids``), and each one's
    scores by item id."""
    rows = AnnotationItem.objects.filter(task=task)
    if item_ids is not None:
        rows = rows.filter(pk__in=item_ids)
    items = list(
        rows.values("pk", "reward", "correct", "machine_scores", "rollout_id", "source_kind", "source")
    )
    values: dict[str, dict[int, float]] = defaultdict(dict)
    meta: dict[str, tuple[str, str, float | None, float | None]] = {}
    run_task = task.source_kind == SourceKind.RUN
    meta["reward"] = (
        "Training-time reward (total)" if run_task else "Evaluation reward",
        GROUPS[0],
        None,
        None,
    )
    meta["correct"] = ("Training-time verdict (correct = 1)" if run_task else "Evaluation verdict (correct = 1)",
                       GROUPS[0], 0.0, 1.0)  # fmt: skip
    bounds = {c["name"]: (float(c["min_value"]), float(c["max_value"])) for c in task.criteria}
    rubric = task.rubric.name if task.rubric else "the task's rubric"
    for item in items:
        for key in ("reward", "correct"):
            if (value := _number(item[key])) is not None:
                values[key][item["pk"]] = value
        for name, record in (item["machine_scores"] or {}).items():
            score = _number(record.get("score")) if isinstance(record, Mapping) else None
            if score is not None and name in bounds:
                values[f"criterion:{name}"][item["pk"]] = score
                scorer = record.get("scorer", "machine")
                meta[f"criterion:{name}"] = (
                    f"{rubric} · {name} ({scorer}, in training)",
                    GROUPS[0],
                    *bounds[name],
                )
    for item_id, rewards in _components(items).items():
        for key, raw in (rewards or {}).items():
            if (value := _number(raw)) is not None:
                values[f"component:{key}"][item_id] = value
                meta.setdefault(f"component:{key}", (f"Reward component {key}", GROUPS[1], None, None))
    _add_job_scores(task, values, meta, item_ids)
    scorers = [MachineScorer(key, *meta[key], items=len(values[key])) for key in meta if values.get(key)]
    return scorers, dict(values)


def _add_job_scores(
    task: AnnotationTask,
    values: dict[str, dict[int, float]],
    meta: dict[str, tuple[str, str, float | None, float | None]],
    item_ids: list[int] | None,
) -> None:
    jobs = {
        j.pk: j for j in ScoringJob.objects.filter(task=task, status=ScoringStatus.SUCCEEDED).order_by("pk")
    }
    rows = ItemScore.objects.filter(job_id__in=list(jobs), score__isnull=False)
    if item_ids is not None:
        rows = rows.filter(item_id__in=item_ids)
    for job_id, key, item_id, score in rows.values_list("job_id", "key", "item_id", "score"):
        if score is None:  # filtered out above; the type does not know
            continue
        job = jobs[job_id]
        scorer_key = f"job:{job_id}:{key}"
        values[scorer_key][item_id] = score
        if scorer_key not in meta:
            low, high = _job_bounds(job, key)
            label = job.label if job.kind == ScorerKind.VERIFIER else f"{job.label} · {key}"
            meta[scorer_key] = (f"{label} (job #{job_id})", GROUPS[2], low, high)


def _job_bounds(job: ScoringJob, key: str) -> tuple[float | None, float | None]:
    """A rubric rule criterion scores on its own scale; a verifier's reward is kept as it is."""
    for spec in job.scorer.get("criteria", []):
        if spec.get("name") == key:
            low, high = {"binary": (0.0, 1.0), "likert5": (1.0, 5.0)}.get(
                spec.get("scale", ""), (float(spec.get("min_value", 0)), float(spec.get("max_value", 1)))
            )
            return low, high
    return None, None


def people_means(*, task: AnnotationTask, criterion: str) -> dict[int, float]:
    """item id -> the mean of the people's submitted scores, normalised to 0-1 by the criterion's scale;
    ``overall``: each person's weighted mean of every criterion so normalised, then the mean of those."""
    by_name = {c["name"]: c for c in task.criteria}
    if criterion != OVERALL and criterion not in by_name:
        message = f"No criterion {criterion!r} in this task: use one of {', '.join(by_name)} or {OVERALL}."
        raise InvalidInput(message, {"criterion": [message]})

    def normalised(name: str, value: float) -> float:
        c = by_name[name]
        width = float(c["max_value"]) - float(c["min_value"])
        return (value - float(c["min_value"])) / width if width > 0 else value

    per_item: dict[int, list[float]] = defaultdict(list)
    rows = Assignment.objects.filter(item__task=task, status=AssignmentStatus.SUBMITTED).values_list(
        "item_id", "scores"
    )
    for item_id, scores in rows:
        known = {n: float(v) for n, v in scores.items() if n in by_name and v is not None}
        if criterion != OVERALL:
            if criterion in known:
                per_item[item_id].append(normalised(criterion, known[criterion]))
            continue
        weights = {n: float(by_name[n].get("weight", 1.0)) for n in known}
        total = sum(weights.values())
        if known and total > 0:
            per_item[item_id].append(sum(weights[n] * normalised(n, v) for n, v in known.items()) / total)
        elif known:
            per_item[item_id].append(sum(normalised(n, v) for n, v in known.items()) / len(known))
    return {item_id: sum(v) / len(v) for item_id, v in per_item.items()}


def machine_agreement(
    *, task: AnnotationTask, scorer: str, criterion: str = OVERALL, table: MachineTable | None = None
) -> dict[str, Any]:
    """One scorer against the people on one criterion (or overall): alpha, Spearman, Pearson and n
    (``table``: a ``machine_table`` the caller already read)."""
    scorers, values = table or machine_table(task=task)
    chosen = next((s for s in scorers if s.key == scorer), None)
    if chosen is None:
        known = ", ".join(s.key for s in scorers) or "none yet"
        message = f"No machine scorer {scorer!r} for this task's items; available: {known}."
        raise InvalidInput(message, {"scorer": [message]})
    machine = values[chosen.key]
    if chosen.low is not None and chosen.high is not None and chosen.high > chosen.low:
        machine = {i: (v - chosen.low) / (chosen.high - chosen.low) for i, v in machine.items()}
    result = scorer_vs_people(machine, people_means(task=task, criterion=criterion))
    return {
        "scorer": chosen.as_dict(),
        "criterion": criterion,
        "normalised": chosen.low is not None,
        **result.as_dict(),
    }


def item_machine_scores(*, task: AnnotationTask, item_id: int) -> list[dict[str, Any]]:
    """Every machine score of one item, for its review page: scorer label, group and the score as stored."""
    scorers, values = machine_table(task=task, item_ids=[item_id])
    return [
        {"key": s.key, "label": s.label, "group": s.group, "score": values[s.key][item_id]}
        for s in scorers
        if item_id in values[s.key]
    ]
