"""A two-row smoke of the reproduction harness (benchmarks/reproduce/run.py), end to end on real training.

The built-in chain models are built for real but cut short (tests/trainer/build_helpers.py) in a fresh model
cache; each arm trains 2 steps and is scored on 40 held-out problems. What is checked is the machinery the
table rests on: every row gets paired statistics, the store resumes (a second run trains nothing and rewrites
the same files), the code that reached each row is recorded and ``--verify-stale`` re-stamps a row whose numbers
a change did not reach, ``--refine-reach`` adds code units to a record, ``--retrain-stale`` keeps the arms a
current row holds, a missing arm is found by ``--no-train`` and retrained alone, and an applicability rule
turns a row "not applicable" from its probe seeds.
"""

from __future__ import annotations

import csv
import json
import os
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest

from benchmarks.reproduce.store import load_arm, write_arm
from tests.trainer.build_helpers import quick_builds
from trainer.models.tiny_model import ensure_tiny_model

ROOT = Path(__file__).resolve().parent.parent.parent
ROWS = "dapo_dynamic_sampling,cue_grpo_rarity"


def _run(home: Path, out: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    cmd = [
        sys.executable,
        "-m",
        "benchmarks.reproduce.run",
        "--methods",
        ROWS,
        "--seeds",
        "0",
        "1",
        "--steps",
        "2",
        "--eval-every",
        "1",
        "--eval-problems",
        "40",
        "--jobs",
        "1",
        "--out",
        str(out),
        *extra,
    ]
    env = {**os.environ, "RLVR_HOME": str(home), "OMP_NUM_THREADS": "1"}
    return subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)


@pytest.mark.slow
def test_two_rows_train_compare_resume_and_regenerate(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = quick_builds(monkeypatch, tmp_path / "rlvr-home")
    ensure_tiny_model("tiny:chain", log=lambda m: None)  # and its teacher, which it starts from
    out = tmp_path / "out"

    first = _run(home, out)
    assert first.returncode == 0, first.stdout + first.stderr
    assert "training" in first.stdout
    results = json.loads((out / "results.json").read_text())["rows"]
    assert set(results) == {"dapo_dynamic_sampling", "cue_grpo_rarity"}
    ds = results["dapo_dynamic_sampling"]
    assert ds["seeds"] == [0, 1] and ds["verdict"] == "mechanism check"
    part = ds["comparisons"][0]["parts"][0]
    assert part["measure"] == "zero_std_frac_early" and part["paired"]["n"] == 2
    assert {"effect", "ci_low", "ci_high", "mde", "relative"} <= set(part["paired"])
    assert [c["measure"] for c in ds["costs"]] == ["rollouts_total", "tokens_total", "wall_total_s"]
    assert all(a["code_revision"] and a["models"]["policy"] for a in ds["arms"])
    # two 2-step arms per seed, plus the cue row's method arms (its comparison is the same plain GRPO)
    stored = sorted((out / "arms").glob("*.json.gz"))
    assert len(stored) == 6
    cue = results["cue_grpo_rarity"]
    if cue["verdict"] == "not applicable":  # 2 steps rarely see two clusters of correct answers
        assert "rarity_groups" in cue["reason"] and cue["comparisons"] == []
    # the reach of the row trained at this code: trainer files that ran, with their hashes; not stale
    reach = json.loads((out / "reach" / "dapo_dynamic_sampling.json").read_text())
    assert "trainer/step/loop.py" in reach["files"] and "benchmarks/reproduce/arms.py" in reach["files"]
    assert not any(f.startswith("tests/") for f in reach["files"])
    assert ds["staleness"]["stale"] is False
    doc = (out / "reproduction.md").read_text()
    assert (
        "**dapo_dynamic_sampling**" in doc
        and "min. detectable" in doc
        and "--methods dapo_dynamic_sampling" in doc
    )
    with (out / "reproduction_curves.csv").open() as f:
        curve = list(csv.DictReader(f))
    assert {r["step"] for r in curve} == {"0", "1", "2"} and {r["role"] for r in curve} == {
        "method",
        "comparison",
    }

    again = _run(home, out)  # resume: everything is stored, nothing trains, the same files come out
    assert again.returncode == 0 and "training" not in again.stdout, again.stdout + again.stderr
    assert (out / "reproduction.md").read_text() == doc

    # a file that reached the row "changed" but the units of it that ran did not (an edited comment, or a
    # function the row never called): current; a unit that ran compiles to something else: stale, then verified
    assert "_guarded_step" in reach["units"]["trainer/step/loop.py"]["units"], reach["units"]
    reach["files"]["trainer/step/loop.py"] = "0" * 16
    (out / "reach" / "dapo_dynamic_sampling.json").write_text(json.dumps(reach))
    assert _run(home, out, "--no-train").returncode == 0
    assert "(stale)" not in (out / "reproduction.md").read_text()
    reach["units"]["trainer/step/loop.py"]["hash"] = "0" * 16
    (out / "reach" / "dapo_dynamic_sampling.json").write_text(json.dumps(reach))
    stale = _run(home, out, "--no-train")
    assert stale.returncode == 0 and "(stale)" in (out / "reproduction.md").read_text()
    verified = _run(home, out, "--verify-stale")
    assert verified.returncode == 0 and "verified: the first 2 steps equal" in verified.stdout, (
        verified.stdout
    )
    row = json.loads((out / "results.json").read_text())["rows"]["dapo_dynamic_sampling"]
    assert row["staleness"]["stale"] is False and row["staleness"]["verified_against"]
    # a current record written before units: --refine-reach traces the row again and adds them, keeping the rest
    files_only = json.loads((out / "reach" / "dapo_dynamic_sampling.json").read_text())
    files_only.pop("units")
    (out / "reach" / "dapo_dynamic_sampling.json").write_text(json.dumps(files_only))
    refined = _run(home, out, "--refine-reach")
    assert refined.returncode == 0 and "code units recorded for" in refined.stdout, (
        refined.stdout + refined.stderr
    )
    record = json.loads((out / "reach" / "dapo_dynamic_sampling.json").read_text())
    assert record["units"]["trainer/step/loop.py"]["units"] and record["verified_against"]
    assert {k: v for k, v in record.items() if k not in ("units", "units_recorded_at")} == files_only

    # every arm as if trained at an older code, and a unit that ran for the DS row changed: --retrain-stale
    # retrains the DS row's own arms only, not the plain-GRPO arms the current cue row also holds
    for path in stored:
        arm = load_arm(path)
        write_arm(path, replace(arm, extra={**arm.extra, "code_revision": "0" * 16}))
    record["files"]["trainer/step/loop.py"] = record["units"]["trainer/step/loop.py"]["hash"] = "0" * 16
    (out / "reach" / "dapo_dynamic_sampling.json").write_text(json.dumps(record))
    redo = _run(home, out, "--retrain-stale")
    assert redo.returncode == 0 and "training 2 arms" in redo.stdout, redo.stdout + redo.stderr
    assert "reach recorded" in redo.stdout
    rows = json.loads((out / "results.json").read_text())["rows"]
    assert not rows["dapo_dynamic_sampling"]["staleness"]["stale"]
    assert not rows["cue_grpo_rarity"]["staleness"]["stale"]

    stored[0].unlink()  # one arm lost: --no-train says so, a normal run retrains that one only
    missing = _run(home, out, "--no-train")
    assert missing.returncode == 1 and "missing arm:" in missing.stdout
    resumed = _run(home, out)
    assert resumed.returncode == 0 and "training 1 arms" in resumed.stdout, resumed.stdout + resumed.stderr
    retrained = json.loads((out / "results.json").read_text())["rows"]
    # training is deterministic: the retrained arm gives the same figures (only its seconds differ)
    for name, row in results.items():
        for before, after in zip(row["comparisons"], retrained[name]["comparisons"], strict=True):
            assert [p["method_values"] for p in after["parts"]] == [
                p["method_values"] for p in before["parts"]
            ]
            assert [p["comparison_values"] for p in after["parts"]] == [
                p["comparison_values"] for p in before["parts"]
            ]


def test_bad_arguments_are_refused_with_the_fix() -> None:
    for args, message in (
        (["--seeds", "0"], "at least 2 distinct seeds"),
        (["--steps", "5", "--eval-every", "2"], "multiple of --eval-every"),
        (["--methods", "nope"], "unknown method 'nope'"),
        (["--eval-problems", "5"], "between 20 and 20000"),
    ):
        done = subprocess.run(
            [sys.executable, "-m", "benchmarks.reproduce.run", *args],
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert done.returncode != 0 and message in done.stderr, (args, done.stderr)
