"""The reproduction table's statistics, verdicts, arm keys and the committed table (benchmarks/reproduce/)."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from benchmarks.reproduce import arms, provenance
from benchmarks.reproduce.arms import ArmSpec, arm_key
from benchmarks.reproduce.stats import paired, paired_eval_se, t_quantile
from benchmarks.reproduce.verdict import (
    AS_CLAIMED,
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


def test_part_verdicts() -> None:
    up, down, flat = (
        _p([0.05, 0.06, 0.04, 0.05]),
        _p([-0.05, -0.06, -0.04, -0.05]),
        _p([0.03, -0.02, 0.01, -0.03]),
    )
    assert part_verdict("higher", up) == AS_CLAIMED and part_verdict("lower", up) == OPPOSITE
    assert part_verdict("lower", down) == AS_CLAIMED and part_verdict("higher", flat) == UNDETECTED
    assert part_verdict("same", flat) == AS_CLAIMED and part_verdict("same", up) == OPPOSITE
    assert part_verdict("higher", _p([0.5])) == UNDETECTED  # one seed says nothing
    assert describe("higher", UNDETECTED, flat, "{:.3f}").startswith(
        "no detectable difference (minimum detectable 0."
    )
    assert describe("same", AS_CLAIMED, flat, "{:.3f}").startswith("as claimed: no detectable difference")
    assert describe("same", OPPOSITE, up, "{:.3f}") == "opposite: higher"


def test_row_verdicts() -> None:
    assert row_verdict([AS_CLAIMED, AS_CLAIMED]) == AS_CLAIMED
    assert row_verdict([AS_CLAIMED, OPPOSITE]) == PARTLY
    assert row_verdict([UNDETECTED, OPPOSITE]) == OPPOSITE
    assert row_verdict([UNDETECTED]) == UNDETECTED


def test_arm_keys_follow_seed_config_code_and_models(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(arms, "_models", lambda config: {"policy": "m1"})
    spec = ArmSpec({}, 0, 60, 20)
    key = arm_key(spec)[0]
    assert arm_key(ArmSpec({}, 0, 60, 20))[0] == key
    assert arm_key(ArmSpec({}, 1, 60, 20))[0] != key
    assert arm_key(ArmSpec({"training": {"learning_rate": 2e-4}}, 0, 60, 20))[0] != key
    assert arm_key(ArmSpec({}, 0, 40, 20))[0] != key
    monkeypatch.setattr(arms, "code_revision", lambda: "another-revision")
    assert arm_key(spec)[0] != key
    monkeypatch.undo()
    monkeypatch.setattr(arms, "_models", lambda config: {"policy": "m2"})
    assert arm_key(spec)[0] != key


def test_prior_file_is_keyed_by_its_content_not_its_path(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(arms, "model_hash", lambda path: "m")
    a, b, c = tmp_path / "a.json", tmp_path / "b.json", tmp_path / "c.json"
    a.write_text('{"1": 0.5}')
    b.write_text('{"1": 0.5}')
    c.write_text('{"1": 0.25}')
    keys = [
        arm_key(
            ArmSpec({"budget": {"prompt_sampler": "beta_learnability", "prior_file": str(p)}}, 0, 60, 20)
        )[0]
        for p in (a, b, c)
    ]
    assert keys[0] == keys[1] != keys[2]


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
    assert (ROOT / "docs" / "reproduction.md").read_text() == render(rows)
    cited = {a["key"] for r in rows for a in r.get("arms", [])}
    assert cited and all(
        (ROOT / "benchmarks" / "reproduce" / "arms" / f"{k}.json.gz").is_file() for k in cited
    )
    for row in rows:
        if row["verdict"] not in ("not applicable", "not run"):
            assert len(row["seeds"]) >= 8, row["method"]
            for part in row["parts"]:
                assert {"ci_low", "ci_high", "mde", "effect"} <= set(part["paired"]), row["method"]
