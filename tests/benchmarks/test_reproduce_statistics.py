"""The reproduction table's statistics, verdicts, arm keys and the committed table (benchmarks/reproduce/)."""

from __future__ import annotations

import json
import math
from dataclasses import replace
from pathlib import Path

import pytest

from benchmarks.reproduce import provenance
from benchmarks.reproduce.evaluation import EVAL
from benchmarks.reproduce.prepare import ANCHOR_PASS
from benchmarks.reproduce.stats import paired, paired_eval_se, t_quantile
from benchmarks.reproduce.store import ArmSpec, PrepareSpec, arm_key, keyed
from benchmarks.reproduce.verdict import (
    AS_CLAIMED,
    INCONCLUSIVE,
    MECHANISM,
    OPPOSITE,
    PARTLY,
    UNDETECTED,
    describe,
    part_verdict,
    row_verdict,
)

ROOT = Path(__file__).resolve().parent.parent.parent


@pytest.mark.parametrize(
    ("p", "df", "expected"),
    [
        (0.975, 1, 12.7062),
        (0.975, 2, 4.3027),
        (0.975, 7, 2.3646),
        (0.975, 30, 2.0423),
        (0.80, 7, 0.8960),
        (0.5, 5, 0.0),
        (0.025, 7, -2.3646),
    ],
)
def test_t_quantiles_match_published_tables(p: float, df: int, expected: float) -> None:
    assert t_quantile(p, df) == pytest.approx(expected, abs=1e-4)


def test_t_quantile_refuses_impossible_arguments() -> None:
    for p, df in ((0.0, 3), (1.0, 3), (0.5, 0)):
        with pytest.raises(ValueError, match="0 < p < 1"):
            t_quantile(p, df)


def test_paired_statistics_of_eight_seeds() -> None:
    base = [0.10, 0.12, 0.11, 0.13, 0.09, 0.10, 0.12, 0.11]
    diffs = [0.02, 0.03, 0.01, 0.02, 0.04, 0.02, 0.03, 0.01]
    p = paired([b + d for b, d in zip(base, diffs, strict=True)], base)
    assert p.n == 8 and p.effect == pytest.approx(0.0225)
    sd = math.sqrt(sum((d - 0.0225) ** 2 for d in diffs) / 7)
    assert p.sd == pytest.approx(sd)
    half = 2.3646 * sd / math.sqrt(8)
    assert (p.ci_low, p.ci_high) == pytest.approx((0.0225 - half, 0.0225 + half), abs=1e-5)
    assert p.mde == pytest.approx((2.3646 + 0.8960) * sd / math.sqrt(8), abs=1e-5)
    assert p.relative == pytest.approx(0.0225 / (sum(base) / 8))
    assert p.significant


def test_paired_pairs_by_seed_not_by_arm_mean() -> None:
    """A constant shift under a large seed spread is detected only because the seeds are paired."""
    base = [0.1, 0.5, 0.2, 0.8, 0.3, 0.6, 0.4, 0.7]
    p = paired([b + 0.01 + (0.001 if i % 2 else -0.001) for i, b in enumerate(base)], base)
    assert p.significant and p.ci_low > 0.005 and p.mde < 0.005


def test_paired_with_too_few_seeds_or_missing_values() -> None:
    assert math.isnan(paired([0.2], [0.1]).mde)
    assert paired([0.2, float("nan"), 0.3], [0.1, 0.1, 0.1]).n == 2
    assert paired([], []).n == 0


def test_evaluation_standard_error_of_a_paired_difference() -> None:
    assert paired_eval_se("1100", "1100") == 0.0
    # b = 1, c = 1 of N = 4: sqrt(2 - 0) / 4
    assert paired_eval_se("1010", "0110") == pytest.approx(math.sqrt(2) / 4)
    assert math.isnan(paired_eval_se("10", "100"))


def _p(values: list[float], base: float = 0.0):  # type: ignore[no-untyped-def]
    return paired(values, [base] * len(values))


def test_part_verdicts_read_the_adjusted_p_values() -> None:
    up, down, flat = (
        _p([0.05, 0.06, 0.04, 0.05]),
        _p([-0.05, -0.06, -0.04, -0.05]),
        _p([0.03, -0.02, 0.01, -0.03]),
    )
    assert part_verdict("higher", up, up.p_value) == AS_CLAIMED
    assert part_verdict("lower", up, up.p_value) == OPPOSITE
    assert part_verdict("lower", down, down.p_value) == AS_CLAIMED
    assert part_verdict("higher", flat, flat.p_value) == UNDETECTED
    assert part_verdict("higher", up, 0.2) == UNDETECTED  # significant raw, not after adjustment
    assert part_verdict("higher", _p([0.5]), float("nan")) == UNDETECTED  # one seed says nothing
    # 'same' is equivalence: an interval holding zero is not enough
    assert part_verdict("same", flat, flat.p_value, 0.01) == AS_CLAIMED
    assert part_verdict("same", flat, flat.p_value, 0.3) == INCONCLUSIVE
    assert part_verdict("same", up, up.p_value, 1.0) == OPPOSITE
    assert describe("higher", UNDETECTED, flat, "{:.3f}").startswith(
        "no detectable difference (minimum detectable 0."
    )
    assert describe("higher", UNDETECTED, up, "{:.3f}").startswith("no detectable difference after Holm")
    assert describe("same", AS_CLAIMED, flat, "{:.3f}", 0.02) == "as claimed: equivalent within +-0.020"
    assert describe("same", INCONCLUSIVE, flat, "{:.3f}", 0.02).startswith("inconclusive")
    assert describe("same", OPPOSITE, up, "{:.3f}", 0.02) == "opposite: higher"


def test_row_verdicts() -> None:
    assert row_verdict([AS_CLAIMED, AS_CLAIMED]) == AS_CLAIMED
    assert row_verdict([AS_CLAIMED, OPPOSITE]) == PARTLY
    assert row_verdict([UNDETECTED, OPPOSITE]) == OPPOSITE
    assert row_verdict([UNDETECTED, INCONCLUSIVE]) == UNDETECTED
    assert row_verdict([]) == MECHANISM


def test_arm_keys_say_what_was_trained() -> None:
    spec = ArmSpec({}, 0, 60, 20)
    key = arm_key(spec)
    assert arm_key(ArmSpec({}, 0, 60, 20)) == key and len(key) == 20
    assert arm_key(ArmSpec({}, 1, 60, 20)) != key
    assert arm_key(ArmSpec({"training": {"learning_rate": 2e-4}}, 0, 60, 20)) != key
    assert arm_key(ArmSpec({}, 0, 40, 20)) != key
    assert arm_key(ArmSpec({}, 0, 60, 20, replace(EVAL, greedy_problems=100))) != key
    # models by name, never by path or weight hash: the keyed text names tiny:chain and holds no path
    text = json.dumps(keyed(spec))
    assert '"tiny:chain"' in text and str(ROOT) not in text


def test_an_offline_pass_is_keyed_by_its_declared_spec_not_its_file() -> None:
    with_pass = ArmSpec({"budget": {"prompt_sampler": "beta_learnability"}}, 0, 60, 20, prepare=ANCHOR_PASS)
    without = ArmSpec({"budget": {"prompt_sampler": "beta_learnability"}}, 0, 60, 20)
    other = PrepareSpec(ANCHOR_PASS.fn, {**ANCHOR_PASS.spec, "samples": 16})
    keys = {arm_key(with_pass), arm_key(without), arm_key(replace(with_pass, prepare=other))}
    assert len(keys) == 3
    assert "prior_file" not in json.dumps(keyed(with_pass)["config"])


def test_code_revision_covers_the_trainer_and_the_arm_modules() -> None:
    here = ROOT / "benchmarks" / "reproduce"
    assert all((here / name).is_file() for name in provenance.ARM_MODULES)
    assert len(provenance.code_revision()) == 16


def test_the_committed_table_is_what_its_rows_render() -> None:
    """docs/reproduction.md is exactly the rendering of benchmarks/reproduce/results.json, and every arm a row
    cites is stored beside it (so the table regenerates from the stored arms)."""
    from benchmarks.reproduce.table import render

    results = json.loads((ROOT / "benchmarks" / "reproduce" / "results.json").read_text())
    rows = sorted(results["rows"].values(), key=lambda r: (r["area"], r["method"]))
    assert (ROOT / "docs" / "reproduction.md").read_text() == render(rows, results["families"])
    cited = {a["key"] for r in rows for a in r.get("arms", [])}
    assert cited and all(
        (ROOT / "benchmarks" / "reproduce" / "arms" / f"{k}.json.gz").is_file() for k in cited
    )
    for row in rows:
        if row["verdict"] not in ("not applicable", "not run"):
            assert len(row["seeds"]) >= 8, row["method"]
            for comp in row["comparisons"]:
                for part in comp["parts"]:
                    assert {"ci_low", "ci_high", "mde", "effect", "p_value"} <= set(part["paired"]), row[
                        "method"
                    ]
                    if part["kind"] == "claim":
                        assert "p_adjusted" in part, row["method"]
