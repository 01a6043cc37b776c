"""Metamorphic audit of a verifier: rewrites of reference answers that must stay equivalent, per answer form.

Metamorphic verifier testing (shared/METHODS.md §7, "Verifier metamorphic testing", 001:L43): apply
metamorphic testing to the *verifier*, not the model. Each reference answer is rewritten into forms that
preserve its mathematical meaning by construction (``1/2`` -> ``0.5``, ``\\frac{1}{2}``, ``\\dfrac12``;
``x = 3``; ``1,234``; ``{3, 1, 2}``; ``\\boxed{...}``; a unit after the number; ...), each rewrite is
scored as a completion against the original reference, and every rejection is a provable false negative.
The report gives the acceptance rate per answer form, so one sees *which* forms consume the error budget.

How it differs from the paper: a small built-in corpus of typed references (``SEEDS``, about 30, covering
integers, fractions, decimals, percentages, equations, units, sets, intervals and radicals) instead of a
benchmark's ground truth; one direction only (the rewrite as the completion, the original as the reference);
``50\\%`` is generated only for references marked as percent-compatible (a probability or a share), and a
unit only for references that carry one, because elsewhere those rewrites change the meaning. The paper's
separation of rejection from execution failure is kept: a verdict with ``detail['error']`` (a crash or a
timeout) counts as ``errors``, not as a rejection.

Django-free: the webapp calls ``audit_verifier`` with a built verifier; ``python -m trainer.verifiers.audit``
prints the table for a registry verifier (default: the built-in ``math``).

>>> [v.form for v in variants_of(Seed("1/2", "fraction", percent_ok=True))][:4]
['plain', 'boxed', 'inline_math', 'sentence']
"""

from __future__ import annotations

import argparse
import json
import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import asdict, dataclass, field
from fractions import Fraction
from typing import Any, Literal

from trainer.samples import Sample
from trainer.verifiers.base import Verifier

Kind = Literal["integer", "fraction", "decimal", "equation", "set", "interval", "radical"]


@dataclass(frozen=True)
class Seed:
    """A reference answer as a dataset would store it, with what the generator needs to rewrite it."""

    reference: str
    kind: Kind
    percent_ok: bool = False  # the answer is a share or probability, so "50\\%" means the same as 1/2
    unit: str | None = None  # e.g. "cm": the question asks for a length in cm, so "12 cm" is the same answer
    variable: str = "x"


@dataclass(frozen=True)
class Variant:
    """One certified-equivalent rewrite: ``completion`` must be accepted against ``reference``."""

    form: str
    kind: Kind
    reference: str
    completion: str


@dataclass
class FormRow:
    """Acceptance of one answer form: ``accepted / (total - errors)`` is the acceptance rate."""

    form: str
    total: int = 0
    accepted: int = 0
    errors: int = 0
    rejected_examples: list[dict[str, str]] = field(default_factory=list)

    @property
    def rate(self) -> float | None:
        scored = self.total - self.errors
        return self.accepted / scored if scored else None


@dataclass
class AuditReport:
    """Per-form rows (in generation order), totals, and every rejected variant (for the report page)."""

    rows: list[FormRow]
    total: int
    accepted: int
    errors: int

    @property
    def rate(self) -> float | None:
        scored = self.total - self.errors
        return self.accepted / scored if scored else None

    def to_json(self) -> dict[str, Any]:
        return {
            "total": self.total,
            "accepted": self.accepted,
            "errors": self.errors,
            "rate": self.rate,
            "rows": [{**asdict(row), "rate": row.rate} for row in self.rows],
        }


SEEDS: tuple[Seed, ...] = (
    Seed("3", "integer"),
    Seed("42", "integer"),
    Seed("-7", "integer"),
    Seed("1234", "integer"),
    Seed("1000000", "integer"),
    Seed("12", "integer", unit="cm"),
    Seed("250", "integer", unit="kg"),
    Seed("1/2", "fraction", percent_ok=True),
    Seed("3/4", "fraction", percent_ok=True),
    Seed("1/8", "fraction"),
    Seed("-2/3", "fraction"),
    Seed("7/3", "fraction"),
    Seed("5/9", "fraction"),
    Seed("0.25", "decimal", percent_ok=True),
    Seed("2.5", "decimal"),
    Seed("-0.75", "decimal"),
    Seed("3.5", "decimal", unit="m"),
    Seed("x = 3", "equation"),
    Seed("y = -2", "equation", variable="y"),
    Seed("x = 1/2", "equation"),
    Seed("\\{1, 2, 3\\}", "set"),
    Seed("\\{-1, 4\\}", "set"),
    Seed("\\{2, 5, 7, 11\\}", "set"),
    Seed("(0, 1]", "interval"),
    Seed("[2, 5)", "interval"),
    Seed("(-\\infty, 3)", "interval"),
    Seed("(-\\infty, -1) \\cup (2, \\infty)", "interval"),
    Seed("2\\sqrt{3}", "radical"),
    Seed("3\\sqrt{2}", "radical"),
)


def _common(seed: Seed, text: str) -> list[tuple[str, str]]:
    """Wrapper forms of the reference as written: bare, boxed, in $...$, in a sentence, trailing period/newline.

    Every other (content) form is presented inside ``\\boxed{}``, the usual RLVR answer convention, so its
    row measures the rewrite itself, not the wrapper."""
    return [
        ("plain", text),
        ("boxed", f"\\boxed{{{text}}}"),
        ("inline_math", f"${text}$"),
        ("sentence", f"The final answer is ${text}$."),
        ("trailing_period", f"{text}."),
        ("trailing_newline", f"{text}\n"),
    ]


def _number_forms(value: Fraction, seed: Seed) -> list[tuple[str, str]]:
    forms: list[tuple[str, str]] = []
    sign = "-" if value < 0 else ""
    magnitude = abs(value)
    if magnitude.denominator == 1:
        n = magnitude.numerator
        forms.append(("decimal_point_zero", f"{sign}{n}.0"))
        if n >= 1000:
            forms.append(("thousands_comma", f"{sign}{n:,}"))
            forms.append(("thousands_latex_comma", sign + f"{n:,}".replace(",", "{,}")))
            forms.append(("thousands_thin_space", sign + f"{n:,}".replace(",", "\\,")))
    else:
        p, q = magnitude.numerator, magnitude.denominator
        forms.append(("slash", f"{sign}{p}/{q}"))
        forms.append(("frac", f"{sign}\\frac{{{p}}}{{{q}}}"))
        forms.append(("dfrac", f"{sign}\\dfrac{{{p}}}{{{q}}}"))
        if p < 10 and q < 10:
            forms.append(("dfrac_no_braces", f"{sign}\\dfrac{p}{q}"))
        if sign:
            forms.append(("frac_negative_numerator", f"\\frac{{-{p}}}{{{q}}}"))
        if _terminates(q):
            forms.append(("decimal", sign + _decimal(magnitude)))
    if sign:
        forms.append(("unicode_minus", f"\u2212{magnitude}"))  # str(Fraction) is "7" or "2/3"
    if seed.percent_ok:
        forms.append(("percent", f"{sign}{_decimal(magnitude * 100)}\\%"))
    if seed.unit:
        shown = seed.reference
        forms.append(("unit_text", f"{shown} \\text{{ {seed.unit}}}"))
        forms.append(("unit_plain", f"{shown} {seed.unit}"))
    return forms


def _terminates(q: int) -> bool:
    for prime in (2, 5):
        while q % prime == 0:
            q //= prime
    return q == 1


def _decimal(value: Fraction) -> str:
    text = f"{float(value):.10f}".rstrip("0").rstrip(".")
    return text or "0"


def _set_forms(seed: Seed) -> list[tuple[str, str]]:
    items = [i.strip() for i in seed.reference.removeprefix("\\{").removesuffix("\\}").split(",")]
    reversed_items = list(reversed(items))
    rotated = items[1:] + items[:1]
    return [
        ("set_reversed", "\\{" + ", ".join(reversed_items) + "\\}"),
        ("set_rotated", "\\{" + ", ".join(rotated) + "\\}"),
        ("set_no_spaces", "\\{" + ",".join(items) + "\\}"),
        ("set_left_right", "\\left\\{" + ", ".join(reversed_items) + "\\right\\}"),
    ]


def _interval_forms(seed: Seed) -> list[tuple[str, str]]:
    ref = seed.reference
    forms = [("interval_no_spaces", ref.replace(" ", ""))]
    if "\\cup" in ref:
        parts = [p.strip() for p in ref.split("\\cup")]
        forms.append(("union_order", " \\cup ".join(reversed(parts))))
    else:
        forms.append(("interval_left_right", "\\left" + ref[0] + ref[1:-1] + "\\right" + ref[-1]))
    return forms


def _radical_forms(seed: Seed) -> list[tuple[str, str]]:
    coefficient, radicand = seed.reference.split("\\sqrt")
    inner = radicand.strip("{}")
    whole = int(coefficient) ** 2 * int(inner)
    return [
        ("sqrt_no_braces", f"{coefficient}\\sqrt{inner}"),
        ("sqrt_times", f"{coefficient} \\cdot \\sqrt{{{inner}}}"),
        ("sqrt_merged", f"\\sqrt{{{whole}}}"),
    ]


def variants_of(seed: Seed) -> list[Variant]:
    """Every certified-equivalent rewrite of one seed, labelled by answer form."""
    ref = seed.reference
    forms: list[tuple[str, str]] = list(_common(seed, ref))
    if seed.kind in ("integer", "fraction", "decimal"):
        forms += _number_forms(Fraction(ref), seed)
    elif seed.kind == "equation":
        value = ref.split("=", 1)[1].strip()
        forms += [("bare_value", value), ("equation_no_spaces", ref.replace(" ", ""))]
        forms += [
            (f"value_{form}", text) for form, text in _number_forms(Fraction(value), Seed(value, "fraction"))
        ]
    elif seed.kind == "set":
        forms += _set_forms(seed)
    elif seed.kind == "interval":
        forms += _interval_forms(seed)
    elif seed.kind == "radical":
        forms += _radical_forms(seed)
    wrappers = {form for form, _ in _common(seed, ref)}
    return [
        Variant(form, seed.kind, ref, text if form in wrappers else f"\\boxed{{{text}}}")
        for form, text in forms
    ]


def generate_variants(seeds: Iterable[Seed] = SEEDS) -> list[Variant]:
    return [variant for seed in seeds for variant in variants_of(seed)]


def audit_verifier(
    verifier: Verifier,
    variants: Sequence[Variant] | None = None,
    *,
    examples_per_form: int = 5,
    on_progress: Callable[[int], None] | None = None,
    chunk_size: int = 64,
) -> AuditReport:
    """Score every variant against its reference, ``chunk_size`` per verifier call, calling ``on_progress``
    with the number scored after each call (a job's progress bar); rows keep the forms' first-seen order."""
    variants = list(variants if variants is not None else generate_variants())
    samples = [Sample(f"audit-{i}", "audit", v.reference) for i, v in enumerate(variants)]
    results = []
    for start in range(0, len(variants), chunk_size):
        part = slice(start, start + chunk_size)
        results += verifier([v.completion for v in variants[part]], samples[part])
        if on_progress is not None:
            on_progress(len(results))
    rows: dict[str, FormRow] = {}
    for variant, result in zip(variants, results, strict=True):
        row = rows.setdefault(variant.form, FormRow(variant.form))
        row.total += 1
        if result.detail.get("error"):
            row.errors += 1
        elif result.correct:
            row.accepted += 1
        elif len(row.rejected_examples) < examples_per_form:
            row.rejected_examples.append(
                {"reference": variant.reference, "completion": variant.completion,
                 "reason": str(result.detail.get("reason", ""))}
            )  # fmt: skip
    ordered = list(rows.values())
    return AuditReport(
        rows=ordered,
        total=sum(r.total for r in ordered),
        accepted=sum(r.accepted for r in ordered),
        errors=sum(r.errors for r in ordered),
    )


def format_table(report: AuditReport) -> str:
    """A Markdown table: form | variants | accepted | errors | acceptance."""
    lines = ["| answer form | variants | accepted | errors | acceptance |", "|---|---:|---:|---:|---:|"]
    for row in report.rows:
        rate = "—" if row.rate is None else f"{row.rate:.0%}"
        lines.append(f"| {row.form} | {row.total} | {row.accepted} | {row.errors} | {rate} |")
    overall = "—" if report.rate is None else f"{report.rate:.1%}"
    lines.append(f"| **all** | {report.total} | {report.accepted} | {report.errors} | {overall} |")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m trainer.verifiers.audit [--verifier math] [--params '{...}'] [--json]``."""
    from trainer.verifiers import build_verifier

    parser = argparse.ArgumentParser(
        description="Metamorphic audit of a verifier (acceptance per answer form)."
    )
    parser.add_argument("--verifier", default="math", help="verifier registry name (default: math)")
    parser.add_argument("--params", default="{}", help="verifier params as JSON (default: {})")
    parser.add_argument("--json", action="store_true", help="print the report as JSON instead of a table")
    args = parser.parse_args(argv)
    verifier = build_verifier(args.verifier, json.loads(args.params))
    report = audit_verifier(verifier)
    if args.json:
        print(json.dumps(report.to_json(), indent=2))
    else:
        print(f"verifier {args.verifier} {args.params}: {len(SEEDS)} references, {report.total} variants")
        print(format_table(report))
    return 0 if report.rate is not None and not math.isnan(report.rate) else 1


if __name__ == "__main__":
    raise SystemExit(main())
