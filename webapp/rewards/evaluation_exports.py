"""A reward-source evaluation's result as a download: one CSV row per source (through webapp/core/csv_export.py, so
a label or a key that looks like a formula stays text) or the whole result as JSON. A step scorer's row carries its
process figures (first-error F1 with its interval, the accuracies on erroneous and right solutions, the step ECE and
its PRM Best-of-N at the headline N); the other columns of its row are empty, as a scalar source's process ones are."""

from __future__ import annotations

import json
from typing import Any

from webapp.core.csv_export import csv_text
from webapp.rewards.models import RewardJob

HEADER = (
    "source", "name", "pairwise_accuracy", "pairwise_ci_low", "pairwise_ci_high", "pairs_scored", "pairs_absent",
    "best_of_n_at", "best_of_n", "random", "majority", "oracle", "audit_fpr", "master_key_fpr",
    "repeat_question_fpr", "agreement", "agreement_items", "latency_s_per_completion", "first_error_f1",
    "first_error_f1_ci_low", "first_error_f1_ci_high", "accuracy_erroneous", "accuracy_correct", "step_ece",
    "prm_best_of_n",
)  # fmt: skip


def headline_n(result: dict[str, Any]) -> int | None:
    """The N the table reports: 16 when the curve reaches it, else its largest N."""
    ns = (result.get("best_of_n") or {}).get("ns") or []
    return 16 if 16 in ns else (max(ns) if ns else None)


def source_summary(result: dict[str, Any], row: dict[str, Any]) -> dict[str, Any]:
    """One source's headline figures (the page's table and the CSV row)."""
    pair = row.get("pairwise") or {}
    curve = row.get("best_of_n") or {}
    audit = row.get("audit") or {}
    agreement = row.get("agreement") or {}
    n = headline_n(result)
    at = curve["ns"].index(n) if curve and n in curve.get("ns", []) else None
    return {
        "label": row["label"], "name": row["name"],
        "pairwise": pair.get("accuracy"), "ci_low": pair.get("ci_low"), "ci_high": pair.get("ci_high"),
        "pairs_scored": pair.get("scored"), "pairs_absent": pair.get("absent"),
        "n": n if at is not None else None,
        "best_of_n": curve["best_of_n"][at] if at is not None else None,
        "random": curve["random"][at] if at is not None else None,
        "majority": curve["majority"][at] if at is not None else None,
        "oracle": curve["oracle"][at] if at is not None else None,
        "audit_fpr": audit.get("fpr"), "master_key_fpr": audit.get("master_key_fpr"),
        "repeat_question_fpr": audit.get("repeat_question_fpr"),
        "agreement": agreement.get("share", agreement.get("spearman")),
        "agreement_items": agreement.get("items"),
        "latency": row.get("latency_s_per_completion"),
    }  # fmt: skip


def process_summary(result: dict[str, Any], row: dict[str, Any]) -> dict[str, Any] | None:
    """A step scorer's process figures (the page's "Process rewards" table and the CSV), None for other sources."""
    process = row.get("process")
    if process is None:
        return None
    first = process.get("first_error") or {}
    ci = first.get("f1_ci") or [None, None]
    curve = process.get("best_of_n") or {}
    n = headline_n(result)
    ns = curve.get("ns") or []
    if n not in ns and ns:
        n = 16 if 16 in ns else max(ns)
    return {
        "label": row["label"], "scorer": process.get("scorer", row["name"]), "reference": process.get("reference"),
        "f1": first.get("f1"), "f1_low": ci[0], "f1_high": ci[1],
        "accuracy_erroneous": first.get("accuracy_erroneous"), "erroneous": first.get("erroneous"),
        "accuracy_correct": first.get("accuracy_correct"), "correct": first.get("correct"),
        "ece": (process.get("calibration") or {}).get("ece"), "steps_mean": process.get("steps_mean"),
        "n": n if n in ns else None, "best_of_n": curve["best_of_n"][ns.index(n)] if n in ns else None,
        "note": process.get("note"),
    }  # fmt: skip


def to_csv(job: RewardJob) -> str:
    result = job.result or {}
    lines = []
    for row in result.get("sources", []):
        s = source_summary(result, row)
        p = process_summary(result, row) or {}
        lines.append([
            s["label"], s["name"], s["pairwise"], s["ci_low"], s["ci_high"], s["pairs_scored"], s["pairs_absent"],
            s["n"], s["best_of_n"], s["random"], s["majority"], s["oracle"], s["audit_fpr"], s["master_key_fpr"],
            s["repeat_question_fpr"], s["agreement"], s["agreement_items"], s["latency"], p.get("f1"),
            p.get("f1_low"), p.get("f1_high"), p.get("accuracy_erroneous"), p.get("accuracy_correct"), p.get("ece"),
            p.get("best_of_n"),
        ])  # fmt: skip
    return csv_text(HEADER, lines)


def to_json(job: RewardJob) -> str:
    return json.dumps(
        {"id": job.pk, "name": job.name, "status": job.status, "config": job.config, "result": job.result},
        indent=1, sort_keys=True, ensure_ascii=False,
    )  # fmt: skip
