"""The metamorphic audit: generated rewrites are equivalent by construction and the report counts per form."""

from __future__ import annotations

from fractions import Fraction

import pytest

from trainer.verifiers import build_verifier
from trainer.verifiers.audit import (
    SEEDS,
    Seed,
    audit_verifier,
    format_table,
    generate_variants,
    main,
    variants_of,
)


def forms(seed: Seed) -> dict[str, str]:
    return {v.form: v.completion for v in variants_of(seed)}


def test_a_half_has_the_issue_forms() -> None:
    got = forms(Seed("1/2", "fraction", percent_ok=True))
    assert got["slash"] == "\\boxed{1/2}"
    assert got["decimal"] == "\\boxed{0.5}"
    assert got["frac"] == "\\boxed{\\frac{1}{2}}"
    assert got["dfrac_no_braces"] == "\\boxed{\\dfrac12}"
    assert got["percent"] == "\\boxed{50\\%}"
    assert got["boxed"] == "\\boxed{1/2}" and got["plain"] == "1/2"


def test_percent_appears_only_where_the_seed_allows_it() -> None:
    assert "percent" not in forms(Seed("1/8", "fraction"))


def test_a_non_terminating_fraction_gets_no_decimal_form() -> None:
    assert "decimal" not in forms(Seed("5/9", "fraction"))


def test_thousands_separators_only_for_large_integers() -> None:
    assert forms(Seed("1234", "integer"))["thousands_comma"] == "\\boxed{1,234}"
    assert "thousands_comma" not in forms(Seed("42", "integer"))


def test_an_equation_yields_its_bare_value() -> None:
    assert forms(Seed("x = 3", "equation"))["bare_value"] == "\\boxed{3}"


def test_set_and_union_orders_are_permuted() -> None:
    assert forms(Seed("\\{1, 2, 3\\}", "set"))["set_reversed"] == "\\boxed{\\{3, 2, 1\\}}"
    union = forms(Seed("(-\\infty, -1) \\cup (2, \\infty)", "interval"))["union_order"]
    assert union == "\\boxed{(2, \\infty) \\cup (-\\infty, -1)}"


def test_units_only_for_seeds_with_a_unit() -> None:
    assert forms(Seed("12", "integer", unit="cm"))["unit_text"] == "\\boxed{12 \\text{ cm}}"
    assert "unit_text" not in forms(Seed("12", "integer"))


def test_numeric_rewrites_keep_the_value() -> None:
    """Every decimal/slash/percent rewrite of a numeric seed parses back to the seed's exact value."""
    for seed in SEEDS:
        if seed.kind not in ("integer", "fraction", "decimal"):
            continue
        value = Fraction(seed.reference)
        for form, text in forms(seed).items():
            inner = text.removeprefix("\\boxed{").removesuffix("}")
            if form in ("slash", "decimal", "decimal_point_zero", "thousands_comma"):
                assert Fraction(inner.replace(",", "")) == value, (seed, form)
            if form == "percent":
                assert Fraction(inner.removesuffix("\\%")) / 100 == value, (seed, form)


def test_every_variant_is_labelled_and_the_corpus_covers_every_kind() -> None:
    variants = generate_variants()
    assert len(variants) > 200
    assert {v.kind for v in variants} == {
        "integer",
        "fraction",
        "decimal",
        "equation",
        "set",
        "interval",
        "radical",
    }
    assert all(v.form and v.completion and v.reference for v in variants)


def test_the_report_counts_acceptance_per_form_with_the_exact_verifier() -> None:
    """exact accepts the reference as written (and with a trailing period) and rejects every rewrite."""
    report = audit_verifier(build_verifier("exact", {"extract": "full"}))
    rows = {row.form: row for row in report.rows}
    assert rows["plain"].rate == 1.0 and rows["trailing_period"].rate == 1.0
    assert rows["frac"].rate == 0.0 and rows["frac"].rejected_examples
    assert report.total == sum(r.total for r in report.rows) == len(generate_variants())
    assert report.errors == 0
    assert "| plain | 29 | 29 | 0 | 100% |" in format_table(report)


def test_a_verdict_with_an_error_counts_as_an_error_not_a_rejection() -> None:
    """reasoning_gym cannot score these samples (no task entry): every verdict carries detail['error']."""
    report = audit_verifier(
        build_verifier("reasoning_gym", {}), [v for v in generate_variants() if v.form == "plain"]
    )
    assert report.errors == report.total == len(SEEDS)
    assert report.rows[0].rate is None and report.rows[0].rejected_examples == []


@pytest.mark.slow
def test_the_math_verifier_accepts_latex_rewrites_and_the_cli_prints_the_table(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["--verifier", "math"]) == 0
    table = capsys.readouterr().out
    assert "| dfrac | 10 | 10 | 0 | 100% |" in table
    assert "| set_reversed | 3 | 3 | 0 | 100% |" in table
    assert "| **all** | " in table


def test_the_audit_scores_in_chunks_reporting_progress_and_the_same_report() -> None:
    verifier = build_verifier("exact", {})
    seen: list[int] = []
    chunked = audit_verifier(verifier, on_progress=seen.append, chunk_size=50)
    total = len(generate_variants())
    assert seen == [min(n, total) for n in range(50, total + 50, 50)]
    assert chunked == audit_verifier(verifier, chunk_size=total)
