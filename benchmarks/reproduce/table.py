"""docs/reproduction.md from the rows of results.json: a pure function of the rows (no clock, no machine)."""

from __future__ import annotations

import math
import statistics
from typing import Any

from benchmarks.reproduce.baseline import BASELINE, STUDENT, TEACHER
from benchmarks.reproduce.evaluation import EVAL
from benchmarks.reproduce.measures import MEASURES
from benchmarks.reproduce.plan import COMMAND, discover_methods
from benchmarks.reproduce.stats import CONFIDENCE, POWER
from benchmarks.reproduce.verdict import AS_CLAIMED, NOT_APPLICABLE, OPPOSITE, PARTLY, UNDETECTED


def _cell(text: Any) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def _fmt(measure: str, value: float | None, signed: bool = False) -> str:
    if value is None or (isinstance(value, float) and not math.isfinite(value)):
        return "n/a"
    text = MEASURES[measure].fmt.format(value)
    return ("+" + text) if signed and value > 0 else text


def _pct(value: float | None) -> str:
    return "n/a" if value is None or not math.isfinite(value) else f"{value:+.0%}"


def _effect(fig: dict[str, Any]) -> tuple[str, str, str, str]:
    p, m = fig["paired"], fig["measure"]
    means = f"{_fmt(m, p['method_mean'])} vs {_fmt(m, p['comparison_mean'])}"
    effect = f"{_fmt(m, p['effect'], signed=True)} ({_pct(p['relative'])})"
    ci = f"[{_fmt(m, p['ci_low'], True)}, {_fmt(m, p['ci_high'], True)}]"
    return means, effect, ci, _fmt(m, p["mde"])


def _summary(rows: list[dict[str, Any]]) -> str:
    lines = [
        "| method | seeds | compared with | claim part | measured quantity | method vs comparison (means) | "
        "effect (relative) | 95% CI | min. detectable | verdict |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for row in rows:
        seeds = f"{len(row['seeds'])} ({row['seeds'][0]}-{row['seeds'][-1]})" if row["seeds"] else "-"
        head = [f"**{row['method']}** (`{row['paper']}`)", seeds, row["comparison"]]
        if row["verdict"] in (NOT_APPLICABLE, "not run"):
            why = row.get("reason", f"arms missing: `{row['command']}`")
            lines.append(
                "| "
                + " | ".join(
                    _cell(x) for x in [*head, "-", "-", "-", "-", "-", "-", f"**{row['verdict']}**: {why}"]
                )
                + " |"
            )
            continue
        for i, part in enumerate(row["parts"]):
            cells = head if i == 0 else ["", "", ""]
            verdict = part["verdict_text"] + (
                f" (row: **{row['verdict']}**)" if i == len(row["parts"]) - 1 else ""
            )
            lines.append(
                "| "
                + " | ".join(
                    _cell(x)
                    for x in [
                        *cells,
                        part["text"],
                        f"`{part['measure']}` ({part['direction']})",
                        *_effect(part),
                        verdict,
                    ]
                )
                + " |"
            )
    return "\n".join(lines)


def _costs(rows: list[dict[str, Any]]) -> str:
    lines = [
        "| method | rollouts (method vs comparison; effect, 95% CI) | completion tokens | seconds of training |",
        "|---|---|---|---|",
    ]
    for row in rows:
        if not row.get("costs"):
            continue
        cells = []
        for fig in row["costs"]:
            means, effect, ci, _ = _effect(fig)
            cells.append(f"{means}; {effect}, {ci}")
        lines.append("| " + " | ".join(_cell(x) for x in [row["method"], *cells]) + " |")
    return "\n".join(lines)


def _eval_noise(rows: list[dict[str, Any]]) -> str:
    """The evaluation's own noise next to the seed-to-seed spread of the paired differences."""
    eval_se, seed_sd = [], []
    for row in rows:
        for part in row.get("parts", []):
            if "eval_se" in part:
                eval_se.append(part["eval_se"])
                if part["paired"]["sd"] is not None:
                    seed_sd.append(part["paired"]["sd"])
    if not eval_se:
        return "(no row measured greedy accuracy yet)"
    accuracies = [
        p["paired"]["comparison_mean"]
        for r in rows
        for p in r.get("parts", [])
        if p["measure"] == "final_accuracy"
    ]
    acc = statistics.fmean(accuracies)
    binomial = math.sqrt(acc * (1 - acc) / EVAL.greedy_problems)
    sampled = math.sqrt(2 * acc * (1 - acc) / EVAL.sampled_problems)
    return (
        f"- Greedy accuracy of one model on the {EVAL.greedy_problems:,} problems: binomial standard error "
        f"{binomial:.4f} at the comparison arms' mean accuracy {acc:.3f}.\n"
        f"- A paired greedy difference on the same problems (McNemar, from the per-problem outcomes stored with "
        f"each arm): evaluation standard error {statistics.fmean(eval_se):.4f} on average over the "
        f"{len(eval_se)} rows that measure it (largest {max(eval_se):.4f}).\n"
        f"- The seed-to-seed standard deviation of those differences: median {statistics.median(seed_sd):.4f}. It "
        f"includes the evaluation's noise, and the confidence intervals and minimum detectable effects are computed "
        f"from it, so they already account for the evaluation.\n"
        f"- Sampled accuracy (one sample each of {EVAL.sampled_problems:,} problems, an independent draw per arm): "
        f"standard error of a difference about {sampled:.4f}, so its minimum detectable effects are larger."
    )


def _groups(rows: list[dict[str, Any]]) -> str:
    def names(pred: Any) -> str:
        chosen = [f"`{r['method']}`" for r in rows if pred(r)]
        return ", ".join(chosen) or "none"

    def direction(r: dict[str, Any]) -> bool:
        return any(p["verdict"] == AS_CLAIMED and p["direction"] != "same" for p in r.get("parts", []))

    return (
        f"- **Reproduced in direction** (every part as claimed): {names(lambda r: r['verdict'] == AS_CLAIMED)}.\n"
        f"- **Partly** (some parts as claimed, others not): {names(lambda r: r['verdict'] == PARTLY)}.\n"
        f"- **No detectable difference** (within the minimum detectable effect shown): "
        f"{names(lambda r: r['verdict'] == UNDETECTED)}.\n"
        f"- **Opposite** (a part moved the other way): {names(lambda r: r['verdict'] == OPPOSITE)}.\n"
        f"- **Cannot be tested at this scale** (not applicable, reason in the table): "
        f"{names(lambda r: r['verdict'] == NOT_APPLICABLE)}.\n"
        f"- **Not run yet at this code revision**: {names(lambda r: r['verdict'] == 'not run')}.\n"
        f"- Rows with a claimed direction reproduced on at least one part: {names(direction)}."
    )


def _provenance(rows: list[dict[str, Any]]) -> str:
    revisions = sorted({a["code_revision"] for r in rows for a in r.get("arms", [])})
    commits = sorted({a["git_commit"] for r in rows for a in r.get("arms", [])})
    models = sorted(
        {f"{role} `{h}`" for r in rows for a in r.get("arms", []) for role, h in (a["models"] or {}).items()}
    )
    arms = len({a["key"] for r in rows for a in r.get("arms", [])})
    return (
        f"{arms} stored arms (benchmarks/reproduce/arms/, one gzip JSON each, keyed by code revision, model "
        f"hashes and config); code revision {', '.join(f'`{r}`' for r in revisions) or 'n/a'} "
        f"(benchmarks/reproduce/provenance.py); trained at git commit {', '.join(f'`{c}`' for c in commits) or 'n/a'}; "
        f"model files {', '.join(models) or 'n/a'}."
    )


def _details(rows: list[dict[str, Any]]) -> str:
    out = []
    for row in rows:
        out.append(f"### {row['method']} (`{row['paper']}`)\n")
        out.append(f"Claim: {row['claim']}\n")
        out.append(
            f"Compared with {row['comparison']}; {len(row['seeds'])} seeds ({' '.join(map(str, row['seeds']))}), "
            f"{row['steps']} steps. Row: `{row['command']}`\n"
        )
        if row.get("reason"):
            out.append(f"Not applicable: {row['reason']}.\n")
        figures = [*row.get("parts", []), *row.get("figures", []), *row.get("costs", [])]
        if figures:
            out.append(
                "| measured quantity | method vs comparison | effect | 95% CI | min. detectable | per seed (method / comparison) |"
            )
            out.append("|---|---|---|---|---|---|")
            for fig in figures:
                m = fig["measure"]
                per_seed = " ".join(
                    f"{_fmt(m, a)}/{_fmt(m, b)}"
                    for a, b in zip(fig["method_values"], fig["comparison_values"], strict=True)
                )
                out.append("| " + " | ".join(_cell(x) for x in [f"`{m}`", *_effect(fig), per_seed]) + " |")
            out.append("")
        if row.get("note"):
            out.append(f"How it differs from the paper: {row['note']}\n")
    return "\n".join(out)


def render(rows: list[dict[str, Any]]) -> str:
    discover_methods()  # the methods files register the measures only they use
    measures = "\n".join(f"- `{m.name}`: {m.description}" for m in MEASURES.values())
    data, rollout, training = BASELINE["data"], BASELINE["rollout"], BASELINE["training"]
    return f"""# Reproduction table

Generated by `{COMMAND}` (benchmarks/reproduce/README.md); do not edit by hand. The whole table comes from
that one command; each row's own command is given in its section below. Finished arms are stored, so the
command resumes where it stopped and, once every arm is stored, retrains nothing and rewrites this file
byte for byte. `{COMMAND} --no-train` rebuilds it from the stored arms and lists any missing at the current
code revision.

**Task and baseline.** Chain arithmetic with a scratchpad (`{data["source"]}`, {data["task"]} levels,
{data["size"]} training problems): the built-in `{STUDENT}` student answers most problems bare and is rarely
right; `{TEACHER}` is the teacher and ThinkPrior's anchor. Every arm is the shared plain-GRPO baseline
(benchmarks/reproduce/baseline.py: {training["prompts_per_step"]} prompts x {rollout["num_generations"]}
completions of up to {rollout["max_completion_length"]} tokens, lr {training["learning_rate"]}, DAPO token-sum
loss) with the method's overrides; each row compares it with its comparison arm on the same seeds. The papers'
claims come from much larger models: what does not show here is reported as such, not tuned.

**Evaluation.** A fixed held-out set of {EVAL.greedy_problems:,} problems (a seed no training run uses,
training prompts removed), the same for every arm: greedy accuracy on all of them, sampled accuracy at
temperature {EVAL.temperature:g} on the first {EVAL.sampled_problems:,}, and a greedy curve on the first
{EVAL.curve_problems} every 20 steps (docs/reproduction_curves.csv holds every arm's curve; the stored arms
hold every step's metrics).

**Statistics.** Each seed's method value is paired with the same seed's comparison value. Effect = mean
paired difference (and relative to the comparison mean); {CONFIDENCE:.0%} confidence interval from Student's
t over the seeds; minimum detectable effect = the true difference a two-sided 5% test over these seeds finds
with {POWER:.0%} power given the observed spread. A part claiming a direction is *as claimed* when its
interval lies on the claimed side of zero, *opposite* on the other side, otherwise *no detectable difference*
(with the minimum detectable effect); a part claiming no change is *as claimed* when the interval holds zero.
A row is *not applicable* when the method cannot act on this task (the reason is given, measured on the probe
seeds where it can be). About one part in twenty of a method with no effect reads as a difference by chance.

## Summary

{_groups(rows)}

## Every part of every claim

{_summary(rows)}

## Costs (every rollout, token and second, offline passes included)

{_costs(rows)}

## Evaluation noise

{_eval_noise(rows)}

## Provenance

{_provenance(rows)}

## Rows

{_details(rows)}

## Measured quantities

{measures}
"""
