"""The reproduction harness's contract over its stored arms (benchmarks/reproduce/): ``--no-train`` rebuilds the
table byte for byte from the committed store with no torch, in a clean copy of the checkout too; a missing arm is
named and nothing is written; a row whose reach changed is marked stale; Holm and TOST match hand-computed
numbers; the precondition rules give their measured reasons; one stored short arm retrains exactly at its commit.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from benchmarks.reproduce.measures import ArmResult
from benchmarks.reproduce.methods_budget import vigor_has_power
from benchmarks.reproduce.methods_loss_shaping import _clip_binds, majority_mostly_right
from benchmarks.reproduce.provenance import file_hash, lock_hash
from benchmarks.reproduce.reach import code_units, units_hash
from benchmarks.reproduce.stats import equivalence_interval, holm, paired, t_quantile, tost
from benchmarks.reproduce.verdict import AS_CLAIMED, INCONCLUSIVE, UNDETECTED, judge

ROOT = Path(__file__).resolve().parent.parent.parent
HERE = ROOT / "benchmarks" / "reproduce"
OUTPUTS = ("results.json", "reproduction.md", "reproduction_curves.csv")


def _run(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(cwd), "OMP_NUM_THREADS": "1"}
    return subprocess.run(
        [sys.executable, "-m", "benchmarks.reproduce.run", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )


def _digest(folder: Path) -> dict[str, str]:
    return {name: hashlib.sha256((folder / name).read_bytes()).hexdigest() for name in OUTPUTS}


def _work_copy(tmp: Path) -> Path:
    """A folder for ``--out``: a copy of the committed store and reach records."""
    out = tmp / "out"
    shutil.copytree(HERE / "arms", out / "arms")
    if (HERE / "reach").is_dir():
        shutil.copytree(HERE / "reach", out / "reach")
    return out


def test_the_arm_keys_and_the_table_need_no_torch() -> None:
    code = (
        "import sys\n"
        "from benchmarks.reproduce.plan import discover_methods, plan_all\n"
        "from benchmarks.reproduce.evaluation import EVAL\n"
        "from benchmarks.reproduce.store import arm_key\n"
        "from benchmarks.reproduce import report, table\n"
        "plans = plan_all(list(discover_methods().values()), range(8), 60, 20, EVAL)\n"
        "keys = {arm_key(s) for p in plans for _, _, s in p.arms()}\n"
        "assert len(keys) > 100, len(keys)\n"
        "assert 'torch' not in sys.modules and 'transformers' not in sys.modules, 'torch was imported'\n"
        "assert 'trainer.models.tiny_model' not in sys.modules, 'the model builder was imported'\n"
        "print('ok')\n"
    )
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0 and "ok" in done.stdout, done.stderr


def test_no_train_writes_the_same_bytes_twice_and_names_no_absolute_path(tmp_path: Path) -> None:
    out = _work_copy(tmp_path)
    first = _run(ROOT, "--no-train", "--allow-missing", "--out", str(out))
    assert first.returncode == 0, first.stdout + first.stderr
    before = _digest(out)
    second = _run(ROOT, "--no-train", "--allow-missing", "--out", str(out))
    assert second.returncode == 0 and _digest(out) == before
    for name in OUTPUTS:
        text = (out / name).read_text()
        assert str(ROOT) not in text and str(tmp_path) not in text, name
    doc = (out / "reproduction.md").read_text()
    assert "0 seeds ()" not in doc and "None steps" not in doc


def test_a_clean_copy_of_the_checkout_regenerates_the_committed_table(tmp_path: Path) -> None:
    """What git would check out (tracked and untracked files, nothing ignored: no caches, no built models)
    rebuilds docs/reproduction.md, its curves and results.json byte for byte."""
    listed = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=ROOT,
        capture_output=True,
        check=True,
        timeout=60,
    ).stdout.split(b"\0")
    clone = tmp_path / "clone"
    for name in (n.decode() for n in listed if n):
        source = ROOT / name
        if source.is_file():
            (clone / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, clone / name)
    done = _run(clone, "--no-train", "--allow-missing")
    assert done.returncode == 0, done.stdout + done.stderr
    for ours, theirs in (
        ("benchmarks/reproduce/results.json", "benchmarks/reproduce/results.json"),
        ("docs/reproduction.md", "docs/reproduction.md"),
        ("docs/reproduction_curves.csv", "docs/reproduction_curves.csv"),
    ):
        assert (clone / ours).read_bytes() == (ROOT / theirs).read_bytes(), ours


def test_a_missing_arm_is_named_and_nothing_is_written(tmp_path: Path) -> None:
    out = _work_copy(tmp_path)
    assert _run(ROOT, "--no-train", "--allow-missing", "--out", str(out)).returncode == 0
    before = _digest(out)
    results = json.loads((out / "results.json").read_text())["rows"]
    arm = next(a for a in results["opd"]["arms"] if a["role"] == "comparison" and a["seed"] == 3)
    (out / "arms" / f"{arm['key']}.json.gz").unlink()
    done = _run(ROOT, "--no-train", "--out", str(out))
    assert done.returncode == 1
    assert "missing arm: opd comparison seed 3" in done.stdout and "nothing written" in done.stdout
    assert _digest(out) == before


def test_a_row_is_stale_when_a_file_that_reached_it_changes(tmp_path: Path) -> None:
    out = _work_copy(tmp_path)
    reach = out / "reach"
    reach.mkdir(exist_ok=True)
    files = {"trainer/step/loop.py": file_hash(ROOT / "trainer/step/loop.py"), "trainer/sinks.py": "0" * 16}
    record = {"row": "opd", "files": files, "lock": lock_hash(), "git_commit": "abc", "verified_against": ""}
    (reach / "opd.json").write_text(json.dumps(record))
    current = {
        **record,
        "row": "cue_grpo_rarity",
        "files": {"trainer/sinks.py": file_hash(ROOT / "trainer/sinks.py")},
    }
    (reach / "cue_grpo_rarity.json").write_text(json.dumps(current))
    done = _run(ROOT, "--no-train", "--allow-missing", "--methods", "opd,cue_grpo_rarity", "--out", str(out))
    assert done.returncode == 0, done.stdout + done.stderr
    rows = json.loads((out / "results.json").read_text())["rows"]
    assert rows["opd"]["staleness"]["stale"] and rows["opd"]["staleness"]["changed"] == ["trainer/sinks.py"]
    assert not rows["cue_grpo_rarity"]["staleness"]["stale"]
    doc = (out / "reproduction.md").read_text()
    assert "**opd** (on-policy distillation (OPD)) (stale)" in doc and "--methods opd --retrain-stale" in doc
    assert "`trainer/sinks.py`" in doc
    # the file differs but the units of it that ran are what ran (a comment, or code the row never called): current
    hashes, _, _ = code_units(ROOT / "trainer/sinks.py")
    ran = {"units": ["<module>"], "hash": units_hash(hashes, ["<module>"])}
    edited = {**current, "files": {"trainer/sinks.py": "0" * 16}, "units": {"trainer/sinks.py": ran}}
    (reach / "cue_grpo_rarity.json").write_text(json.dumps(edited))
    _run(ROOT, "--no-train", "--allow-missing", "--methods", "cue_grpo_rarity", "--out", str(out))
    assert not json.loads((out / "results.json").read_text())["rows"]["cue_grpo_rarity"]["staleness"]["stale"]
    (reach / "cue_grpo_rarity.json").write_text(json.dumps({**current, "lock": "another"}))
    _run(ROOT, "--no-train", "--allow-missing", "--methods", "cue_grpo_rarity", "--out", str(out))
    rows = json.loads((out / "results.json").read_text())["rows"]
    assert rows["cue_grpo_rarity"]["staleness"]["why"] == "deploy/requirements.lock changed"


def test_code_units_ignore_comments_and_code_that_did_not_run(tmp_path: Path) -> None:
    src = "RATE = 2\n\n\ndef ran(x):\n    return x * RATE\n\n\ndef idle(x):\n    return x\n\n\nclass Box:\n    N = 1\n"
    path = tmp_path / "m.py"
    path.write_text(src)
    hashes, at, on_import = code_units(path)
    assert (
        at[("ran", 4)] == "ran"
        and set(hashes) == {"<module>", "ran", "idle", "Box"}
        and on_import == {"<module>", "Box"}
    )
    ran = ["<module>", "ran"]
    before = units_hash(hashes, ran)
    path.write_text("# a line above moves every unit down\n" + src.replace("return x\n", "return x + 1\n"))
    assert units_hash(code_units(path)[0], ran) == before  # idle changed; what ran did not
    path.write_text(src.replace("x * RATE", "x * RATE + 1"))
    assert units_hash(code_units(path)[0], ran) != before
    path.write_text(src.replace("RATE = 2", "RATE = 3"))  # the module body ran: its constants count
    assert units_hash(code_units(path)[0], ran) != before
    path.write_text(src.replace("def ran", "def renamed").replace("return x * RATE", "return renamed"))
    assert units_hash(code_units(path)[0], ran) is None
    path.write_text("def broken(:\n")
    assert code_units(path) == ({}, {}, set())


def test_holm_on_hand_computed_numbers() -> None:
    # sorted: 0.005 x 4 = 0.02, 0.01 x 3 = 0.03, 0.03 x 2 = 0.06, 0.04 x 1 = 0.04 -> max so far 0.06
    assert holm([0.01, 0.04, 0.03, 0.005]) == pytest.approx([0.03, 0.06, 0.06, 0.02])
    adjusted = holm([0.2, float("nan"), 0.6])  # nan is not a test: a family of two
    assert adjusted[0] == pytest.approx(0.4) and math.isnan(adjusted[1]) and adjusted[2] == pytest.approx(0.6)
    assert holm([0.9, 0.8]) == [1.0, 1.0]


def test_tost_and_the_paired_p_on_hand_computed_numbers() -> None:
    # differences +a, -a four times: mean 0, sd = a sqrt(8/7), se = a / sqrt(7); with the margin at
    # t(0.975, 7) x se each one-sided test has p = 0.025 exactly
    a = 0.01
    p = paired([a, -a] * 4, [0.0] * 8)
    se = a / math.sqrt(7)
    assert p.sd / math.sqrt(8) == pytest.approx(se)
    assert tost(p, 2.3646 * se) == pytest.approx(0.025, abs=1e-4)
    assert tost(p, 0.5 * se) > 0.3  # a margin inside the noise: not shown equivalent
    low, high = equivalence_interval(p)
    assert (low, high) == pytest.approx((-t_quantile(0.95, 7) * se, t_quantile(0.95, 7) * se))
    # a shift whose t is t(0.975, 7): two-sided p 0.05
    shifted = paired([2.3646 * se + x for x in [a, -a] * 4], [0.0] * 8)
    assert shifted.p_value == pytest.approx(0.05, abs=1e-4)


def _part(values: list[float], direction: str, kind: str = "claim", margin: float = 0.0) -> dict[str, Any]:
    stats = paired(values, [0.0] * len(values))
    part: dict[str, Any] = {
        "measure": "final_accuracy",
        "paired": stats.to_json(),
        "direction": direction,
        "kind": kind,
    }
    if direction == "same" and kind == "claim":
        part.update(margin=margin, p_equivalence=tost(stats, margin))
    return part


def test_judge_adjusts_across_the_whole_table_and_keeps_mechanism_checks_out() -> None:
    lone = _part([0.011, 0.019, 0.012, 0.021, 0.009, 0.02, 0.013, 0.016], "higher")  # raw p ~ 1e-5
    weak = _part([0.03, -0.008, 0.025, 0.002, 0.02, 0.015, -0.005, 0.02], "higher")  # raw p 0.044
    same = _part([0.001, -0.002, 0.0, 0.001, -0.001, 0.002, -0.001, 0.0], "same", margin=0.02)
    mechanism = _part([0.5] * 7 + [0.49], "higher", "mechanism")
    rows = [
        {"verdict": "computed", "comparisons": [{"parts": [lone, weak]}]},
        {"verdict": "computed", "comparisons": [{"parts": [same, mechanism]}]},
    ]
    assert weak["paired"]["p_value"] < 0.05
    judge(rows, {"final_accuracy": "{:.3f}"})
    assert lone["verdict"] == AS_CLAIMED and weak["verdict"] == UNDETECTED  # 0.03 x 3 tests left > 0.05
    assert weak["p_adjusted"] > weak["paired"]["p_value"]
    assert same["verdict"] == AS_CLAIMED and same["verdict_text"] == "as claimed: equivalent within +-0.020"
    assert mechanism["verdict"] == "mechanism" and "p_adjusted" not in mechanism
    assert lone["family_size"] == 4  # two direction parts + the same part's difference and equivalence tests
    assert rows[0]["verdict"] == "partly as claimed" and rows[1]["verdict"] == AS_CLAIMED
    wide = _part([0.03, -0.03, 0.02, -0.02, 0.01, -0.01, 0.0, 0.0], "same", margin=0.01)
    judge([{"verdict": "computed", "comparisons": [{"parts": [wide]}]}], {"final_accuracy": "{:.3f}"})
    assert wide["verdict"] == INCONCLUSIVE


def _arm(metrics: dict[str, float], evals: list[float] | None = None) -> ArmResult:
    points = [
        {"step": 20 * i, "greedy": g, "greedy_n": 500, "cumulative_rollouts": 1280.0 * i}
        for i, g in enumerate(evals or [0.1, 0.2])
    ]
    return ArmResult([dict(metrics)] * 10, points, 1.0, {"eval": {"curve_problems": 500}})


def test_majority_vote_precondition_reads_the_measured_share() -> None:
    wrong = [_arm({"label_free/majority_correct": 0.07}), _arm({"label_free/majority_correct": 0.09})]
    truth = [_arm({})]  # the ground-truth arm has no vote: not read
    reason = majority_mostly_right(wrong, truth)
    assert reason is not None and "8.0% of the groups" in reason and "0.070-0.090 over the 2" in reason
    assert majority_mostly_right([_arm({"label_free/majority_correct": 0.7})], truth) is None
    assert majority_mostly_right([], truth) is None  # nothing measured: no verdict either way


def test_gapo_precondition_is_the_comparisons_clip_fraction() -> None:
    idle = [_arm({"actor/clip_frac": 0.0013}), _arm({"actor/clip_frac": 0.0011})]
    reason = _clip_binds([], idle)
    assert reason is not None and "0.12% of its loss tokens" in reason
    assert _clip_binds([], [_arm({"actor/clip_frac": 0.05})]) is None


def test_vigor_precondition_is_power_at_the_first_checkpoint() -> None:
    early = [_arm({}, [0.1, 0.18, 0.19, 0.2]) for _ in range(3)] + [_arm({}, [0.1, 0.12, 0.15, 0.2])]
    reason = vigor_has_power([], early)
    assert reason is not None and "in 3 of 4 seeds" in reason and "step 20" in reason
    late = [_arm({}, [0.1, 0.12, 0.15, 0.2]) for _ in range(3)] + [_arm({}, [0.1, 0.18, 0.19, 0.2])]
    assert vigor_has_power([], late) is None


def test_the_committed_not_applicable_rows_give_a_reason_and_no_empty_figures() -> None:
    rows = json.loads((HERE / "results.json").read_text())["rows"]
    doc = (ROOT / "docs" / "reproduction.md").read_text()
    assert "0 seeds ()" not in doc and "None steps" not in doc
    for name in ("majority_vote_reward", "om_grpo_answer_mask", "gapo_adaptive_clip"):
        assert rows[name]["verdict"] == "not applicable" and rows[name]["reason"], name
    assert "majority answer was right in" in rows["majority_vote_reward"]["reason"]


def test_one_stored_short_arm_retrains_exactly_at_its_commit() -> None:
    """The fixture arm (``--train-fixture``, trained at a clean commit) trained again in a git worktree at that
    commit gives the same metrics and evaluations, exactly, on the recorded processor from the recorded models (the
    shipped weights); on another processor, or with other models in the cache, the retraining says so first and the
    test says so instead."""
    from benchmarks.reproduce.retrain import (
        FIXTURE_DIR,
        FIXTURE_SPEC,
        MODELS_DIFFER,
        PROCESSOR_DIFFERS,
        retrain_at_commit,
    )
    from benchmarks.reproduce.store import arm_key, stored_path

    key = arm_key(FIXTURE_SPEC)
    if not stored_path(FIXTURE_DIR, key).is_file():
        pytest.skip(
            f"the fixture arm {key} is not stored yet: train it at a clean commit with --train-fixture"
        )
    differences = retrain_at_commit(key, FIXTURE_DIR, log=lambda _m: None)
    if differences and differences[0].startswith((PROCESSOR_DIFFERS, MODELS_DIFFER)):
        pytest.skip(differences[0])
    assert differences == []


def test_two_trainings_of_one_arm_compare_on_everything_but_timings() -> None:
    from benchmarks.reproduce.retrain import compare_arms

    def arm(loss: float, seconds: float, greedy: float, policy: str = "aa") -> ArmResult:
        metrics = {"actor/loss": loss, "perf/step_s": seconds, "reward/chain_arithmetic_latency_s": seconds}
        return ArmResult([metrics], [{"step": 0, "greedy": greedy}], seconds, {"models": {"policy": policy}})

    assert compare_arms(arm(0.5, 1.0, 0.2), arm(0.5, 9.0, 0.2)) == []
    assert compare_arms(arm(0.5, 1.0, 0.2), arm(0.4, 1.0, 0.2)) == ["metrics differ: actor/loss"]
    assert compare_arms(arm(0.5, 1.0, 0.2), arm(0.5, 1.0, 0.3)) == ["evaluation 0 (step 0)"]
    other = compare_arms(arm(0.5, 1.0, 0.2, "bb"), arm(0.5, 1.0, 0.2))
    assert len(other) == 1 and other[0].startswith("the built models differ: built here {'policy': 'bb'}")
    elsewhere, here = arm(0.5, 1.0, 0.2), arm(0.5, 1.0, 0.2)
    elsewhere.extra["processor"], here.extra["processor"] = "AMD EPYC | avx2 avx512f", "Intel Xeon | avx2"
    assert compare_arms(here, elsewhere)[0].startswith(
        "trained on another processor: here 'Intel Xeon | avx2'"
    )
    assert compare_arms(elsewhere, elsewhere) == []
