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
from benchmarks.reproduce.verdict import (
    ALPHA,
    AS_CLAIMED,
    MECHANISM,
    NOT_APPLICABLE,
    NOT_RUN,
    OPPOSITE,
    PARTLY,
    UNDETECTED,
)


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


def _p(value: float | None) -> str:
    if value is None or not math.isfinite(value):
        return "n/a"
    return "<0.001" if value < 0.001 else f"{value:.3f}"


def _name(row: dict[str, Any]) -> str:
    stale = " (stale)" if (row.get("staleness") or {}).get("stale") else ""
    return f"**{row['method']}** ({row['cites']}){stale}"


def _missing(entries: list[dict[str, Any]]) -> str:
    return ", ".join(f"{m['role']} seed {m['seed']}" for m in entries)


def _part_cells(part: dict[str, Any]) -> list[str]:
    if part["direction"] == "same" and part["kind"] == "claim":
        p = f"{_p(part['paired'].get('p_value'))} / {_p(part.get('p_adjusted'))}; equivalence {_p(part.get('p_equivalence'))} / {_p(part.get('p_equivalence_adjusted'))}"
        bound = f"margin +-{_fmt(part['measure'], part.get('margin'))}"
    elif part["kind"] == "claim":
        p = f"{_p(part['paired'].get('p_value'))} / {_p(part.get('p_adjusted'))}"
        bound = _fmt(part["measure"], part["paired"]["mde"])
    else:
        p = f"{_p(part['paired'].get('p_value'))} / -"
        bound = _fmt(part["measure"], part["paired"]["mde"])
    means, effect, ci, _ = _effect(part)
    kind = {"mechanism": " [mechanism check]", "ablation": " [ablation]"}.get(part["kind"], "")
    return [part["text"] + kind, f"`{part['measure']}` ({part['direction']})", means, effect, ci, p, bound]


def _summary(rows: list[dict[str, Any]]) -> str:
    lines = [
        "| method | seeds | compared with | claim part | measured quantity | method vs comparison (means) | "
        "effect (relative) | 95% CI | p (raw / Holm) | min. detectable or margin | verdict |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for row in rows:
        seeds = f"{len(row['seeds'])} ({row['seeds'][0]}-{row['seeds'][-1]})" if row["seeds"] else "-"
        head = [_name(row), seeds]
        if row["verdict"] in (NOT_APPLICABLE, NOT_RUN):
            if row["verdict"] == NOT_APPLICABLE:
                why = row["reason"]
            else:
                why = f"arms missing ({_missing(row['missing'])}): `{row['command']}`"
            cells = [*head, row["comparison"], *["-"] * 7, f"**{row['verdict']}**: {why}"]
            lines.append("| " + " | ".join(_cell(x) for x in cells) + " |")
            continue
        first = True
        body = [(c, p) for c in row["comparisons"] for p in (c["parts"] or [None])]
        for i, (comp, part) in enumerate(body):
            cells = [
                *(head if first else ["", ""]),
                comp["label"]
                if comp["subject_role"] == "method"
                else f"{comp['label']} ({comp['subject_role']} arm)",
            ]
            first = False
            last = i == len(body) - 1
            tail = f" (row: **{row['verdict']}**)" if last else ""
            if part is None:
                cells += ["-"] * 7 + [f"**not run**: arms missing ({_missing(comp['missing'])}){tail}"]
            else:
                cells += [*_part_cells(part), part["verdict_text"] + tail]
            lines.append("| " + " | ".join(_cell(x) for x in cells) + " |")
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


def _all_parts(row: dict[str, Any], own_only: bool = False) -> list[dict[str, Any]]:
    comps = row.get("comparisons", [])
    return [p for c in (comps[:1] if own_only else comps) for p in c["parts"]]


def _eval_noise(rows: list[dict[str, Any]]) -> str:
    """The evaluation's own noise next to the seed-to-seed spread of the paired differences."""
    eval_se, seed_sd, accuracies = [], [], []
    for row in rows:
        for part in _all_parts(row, own_only=True):
            if "eval_se" in part:
                eval_se.append(part["eval_se"])
                accuracies.append(part["paired"]["comparison_mean"])
                if part["paired"]["sd"] is not None:
                    seed_sd.append(part["paired"]["sd"])
    if not eval_se or not seed_sd:
        return "(no row measured greedy accuracy yet)"
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
        return any(
            p["kind"] == "claim" and p["verdict"] == AS_CLAIMED and p["direction"] != "same"
            for p in _all_parts(r)
        )

    def incomplete(r: dict[str, Any]) -> bool:
        return r["verdict"] != NOT_RUN and any(c["missing"] for c in r.get("comparisons", []))

    return (
        f"- **Reproduced** (every claim part as claimed, Holm-adjusted): "
        f"{names(lambda r: r['verdict'] == AS_CLAIMED)}.\n"
        f"- **Partly** (some claim parts as claimed, others not): {names(lambda r: r['verdict'] == PARTLY)}.\n"
        f"- **No detectable difference or inconclusive** (within the minimum detectable effect or margin shown): "
        f"{names(lambda r: r['verdict'] == UNDETECTED)}.\n"
        f"- **Opposite** (a claim part moved the other way): {names(lambda r: r['verdict'] == OPPOSITE)}.\n"
        f"- **Mechanism check only** (the claim is true by construction; shown, not evidence): "
        f"{names(lambda r: r['verdict'] == MECHANISM)}.\n"
        f"- **Not applicable** (the method cannot act here; the measured reason is in the table): "
        f"{names(lambda r: r['verdict'] == NOT_APPLICABLE)}.\n"
        f"- **Not run** (arms missing): {names(lambda r: r['verdict'] == NOT_RUN)}; "
        f"**a comparison not run**: {names(incomplete)}.\n"
        f"- **Stale** (code that reached the arms changed since they were trained): "
        f"{names(lambda r: (r.get('staleness') or {}).get('stale'))}.\n"
        f"- Rows with a claimed direction reproduced on at least one claim part: {names(direction)}."
    )


def _staleness(rows: list[dict[str, Any]]) -> str:
    lines = []
    for row in rows:
        st = row.get("staleness") or {}
        commits = sorted({str(a["git_commit"]) for a in row.get("arms", [])})
        trained = f"trained at commit {', '.join(f'`{c}`' for c in commits)}" if commits else "no arm stored"
        if st.get("stale"):
            files = ", ".join(f"`{f}`" for f in st["changed"]) + (
                f" and {st['more']} more" if st["more"] else ""
            )
            changed = f"; changed: {files}" if st["changed"] else ""
            lines.append(
                f"- `{row['method']}`: **stale**, {trained}: {st['why']}{changed}. Retrain: "
                f"`{COMMAND} --methods {row['method']} --retrain-stale` (or check first: `--verify-stale`)."
            )
        elif st.get("verified_against"):
            lines.append(
                f"- `{row['method']}`: current, {trained}; a 2-step pass at a later code matched the stored first "
                f"steps exactly (verified against `{st['verified_against']}`)."
            )
    if not lines:
        return "No row is stale: the code that reached every row's arms is today's."
    return "\n".join(lines)


def _families(families: dict[str, list[dict[str, Any]]]) -> str:
    if not families:
        return "(no family of rows)"
    out = []
    for name, entries in families.items():
        out.append(
            f"**{name}**: the method arms of these rows compared pairwise on the seeds both have (descriptive, "
            f"not claims: outside the Holm family).\n"
        )
        out.append("| row A | row B | measured quantity | A vs B (means) | effect | 95% CI | p (raw) |")
        out.append("|---|---|---|---|---|---|---|")
        for e in entries:
            means, effect, ci, _ = _effect(e)
            out.append(
                "| "
                + " | ".join(
                    _cell(x)
                    for x in [
                        e["a"],
                        e["b"],
                        f"`{e['measure']}`",
                        means,
                        effect,
                        ci,
                        _p(e["paired"].get("p_value")),
                    ]
                )
                + " |"
            )
        out.append("")
    return "\n".join(out)


def _provenance(rows: list[dict[str, Any]]) -> str:
    arms = [a for r in rows for a in r.get("arms", [])]
    revisions = sorted({str(a["code_revision"]) for a in arms})
    commits = sorted({str(a["git_commit"]) for a in arms})
    models = sorted({f"{role} `{h}`" for a in arms for role, h in (a["models"] or {}).items()})
    return (
        f"{len({a['key'] for a in arms})} stored arms (benchmarks/reproduce/arms/, one gzip JSON each, keyed by "
        f"what was trained: the config with model names, seed, steps, evaluation spec, an offline pass's spec); "
        f"each records the commit, code revision, model hashes and config that produced it (and, from store "
        f"version 4 on, the lock file hash and library versions). Code revisions {', '.join(f'`{r}`' for r in revisions) or 'n/a'} "
        f"(benchmarks/reproduce/provenance.py); git commits {', '.join(f'`{c}`' for c in commits) or 'n/a'} "
        f"('+dirty': uncommitted changes under trainer/ or the harness then); model files "
        f"{', '.join(models) or 'n/a'}."
    )


def _figure_lines(figures: list[dict[str, Any]]) -> list[str]:
    out = [
        "| measured quantity | method vs comparison | effect | 95% CI | min. detectable | per seed (method / comparison) |",
        "|---|---|---|---|---|---|",
    ]
    for fig in figures:
        m = fig["measure"]
        per_seed = " ".join(
            f"{_fmt(m, a)}/{_fmt(m, b)}"
            for a, b in zip(fig["method_values"], fig["comparison_values"], strict=True)
        )
        out.append("| " + " | ".join(_cell(x) for x in [f"`{m}`", *_effect(fig), per_seed]) + " |")
    out.append("")
    return out


def _details(rows: list[dict[str, Any]]) -> str:
    out = []
    for row in rows:
        out.append(f"### {row['method']}: {row['cites']}\n")
        out.append(f"Claim: {row['claim']}\n")
        if row["verdict"] == NOT_APPLICABLE:
            read = row.get("seeds_read") or []
            seen = f" (measured on seeds {' '.join(map(str, read))})" if read else ""
            out.append(f"Not applicable{seen}: {row['reason']}. Row: `{row['command']}`\n")
        else:
            compared = (
                "; ".join(
                    c["label"]
                    if c["subject_role"] == "method"
                    else f"{c['label']} (the {c['subject_role']} arm against it)"
                    for c in row.get("comparisons", [])
                )
                or row["comparison"]
            )
            out.append(
                f"Compared with {compared}; {len(row['seeds'])} seeds ({' '.join(map(str, row['seeds']))}), "
                f"{row['steps']} steps. Row: `{row['command']}`\n"
            )
        comps = row.get("comparisons", [])
        parts = list(comps[0]["parts"]) if comps else []
        figures = [*parts, *row.get("figures", []), *row.get("costs", [])]
        if figures:
            out += _figure_lines(figures)
        for comp in comps[1:]:
            if comp["parts"]:
                out.append(f"Against {comp['label']} ({comp['subject_role']} arm vs `{comp['role']}` arm):\n")
                out += _figure_lines(comp["parts"])
        if row.get("note"):
            out.append(f"How it differs from the paper: {row['note']}\n")
    return "\n".join(out)


def render(rows: list[dict[str, Any]], families: dict[str, list[dict[str, Any]]] | None = None) -> str:
    discover_methods()  # the methods files register the measures only they use
    measures = "\n".join(
        f"- `{m.name}`: {m.description}"
        + (f" Equivalence margin +-{m.fmt.format(m.margin)}." if m.margin else "")
        for m in MEASURES.values()
    )
    data, rollout, training = BASELINE["data"], BASELINE["rollout"], BASELINE["training"]
    family_size = max((p.get("family_size", 0) for r in rows for p in _all_parts(r)), default=0)
    return f"""# Reproduction table

Generated by `{COMMAND}` (benchmarks/reproduce/README.md); do not edit by hand. The whole table comes from
that one command; each row's own command is given in its section below. Every finished arm is stored under a
key of what was trained (config with model names, seed, steps, evaluation), with the commit, lock file and model
hashes that produced it. `{COMMAND} --no-train` rebuilds this file and its curves from the stored arms, byte
for byte, whatever the current code; it trains and builds nothing, names any missing arm and then writes
nothing. A row whose code has changed since its arms were trained is marked stale (see Staleness) until
`--retrain-stale` retrains it or `--verify-stale` shows the change did not reach its numbers.

**Task and baseline.** Chain arithmetic with a scratchpad (`{data["source"]}`, {data["task"]} levels,
{data["size"]} training problems): the built-in `{STUDENT}` student answers most problems bare and is rarely
right; `{TEACHER}` is the teacher and ThinkPrior's anchor. Every arm is the shared plain-GRPO baseline
(benchmarks/reproduce/baseline.py: {training["prompts_per_step"]} prompts x {rollout["num_generations"]}
completions of up to {rollout["max_completion_length"]} tokens, lr {training["learning_rate"]}, DAPO token-sum
loss) with the method's overrides; each row compares it with the comparison its paper makes, on the same seeds.
The papers' claims come from much larger models: what does not show here is reported as such, not tuned.

**Evaluation.** A fixed held-out set of {EVAL.greedy_problems:,} problems (a seed no training run uses,
training prompts removed), the same for every arm: greedy accuracy on all of them, sampled accuracy at
temperature {EVAL.temperature:g} on the first {EVAL.sampled_problems:,}, and a greedy curve on the first
{EVAL.curve_problems} every 20 steps (docs/reproduction_curves.csv holds every arm's curve; the stored arms
hold every step's metrics).

**Statistics.** Each seed's method value is paired with the same seed's comparison value. Effect = mean
paired difference (and relative to the comparison mean); {CONFIDENCE:.0%} confidence interval from Student's
t over the seeds; p = the paired t test's two-sided p; minimum detectable effect = the true difference a
two-sided 5% test over these seeds finds with {POWER:.0%} power given the observed spread. The p-values of
every claim part in the table ({family_size} tests) are adjusted together with Holm's method and the verdicts
read the adjusted ones (alpha {ALPHA:g}). A part claiming a direction is *as claimed* when the adjusted test
rejects no difference on the claimed side, *opposite* on the other side, otherwise *no detectable difference*
(with the minimum detectable effect). A part claiming no change is tested for equivalence: *as claimed* when
the two one-sided tests (TOST) put the difference inside the stated margin (the 90% interval inside +-margin,
adjusted p below {ALPHA:g}), *opposite* when the difference test rejects zero, otherwise *inconclusive*. Parts
true by construction are marked *mechanism check* and are not evidence; *ablation* parts say which ingredient
moved a number. A row is *not applicable* when the method cannot act on this task (the reason is measured on
its stored arms where it can be).

## Summary

{_groups(rows)}

## Every part of every claim

{_summary(rows)}

## Families of rows

{_families(families or {})}
## Costs (every rollout, token and second, offline passes included)

{_costs(rows)}

## Evaluation noise

{_eval_noise(rows)}

## Staleness

{_staleness(rows)}

## Provenance

{_provenance(rows)}

## Rows

{_details(rows)}

## Measured quantities

{measures}
"""
