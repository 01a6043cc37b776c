"""`rlvr eval` end to end on the warm-started tiny model, including a resume after a crash."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from trainer.cli import main
from trainer.evaluation.cli import problems_path, read_progress


def _eval(model: Path, out: Path, *extra: str) -> int:
    return main(
        [
            "eval",
            "--model",
            str(model),
            "--benchmark",
            "builtin:addition",
            "--n",
            "4",
            "--k",
            "1,2,4",
            "--max-problems",
            "4",
            "--batch-size",
            "4",
            "--device",
            "cpu",
            "--out",
            str(out),
            *extra,
        ]
    )


@pytest.mark.slow  # loads the tiny model and samples 16 completions, three times
def test_rlvr_eval_writes_results_and_resumes_after_a_crash(warm_model_dir: Path, tmp_path: Path, capsys):
    out = tmp_path / "results.json"
    assert _eval(warm_model_dir, out) == 0
    printed = capsys.readouterr().out
    assert "pass@4 (n=4)" in printed and "verification" in printed
    whole = json.loads(out.read_text())["benchmarks"]["addition"]
    assert set(whole["metrics"]) == {
        "avg@4",
        "pass@1 (n=4)",
        "pass@2 (n=4)",
        "pass@4 (n=4)",
        "maj@4",
        "response_len_mean",
        "truncated",
    }
    assert [p["problem_id"] for p in whole["problems"]] == ["demo-0", "demo-1", "demo-2", "demo-3"]

    # An existing progress file is never silently overwritten.
    assert _eval(warm_model_dir, out) == 2
    assert "--resume" in capsys.readouterr().err

    # Crash after two problems, mid-way through writing the third line.
    progress = problems_path(out)
    lines = progress.read_text().splitlines(keepends=True)
    assert len(lines) == 1 + 4  # header + one line per problem
    progress.write_text("".join(lines[:3]) + lines[3][:40])
    out.unlink()
    assert _eval(warm_model_dir, out, "--resume") == 0
    resumed = json.loads(out.read_text())["benchmarks"]["addition"]
    assert resumed["metrics"] == whole["metrics"]
    assert resumed["problems"] == whole["problems"]
    _, done = read_progress(progress)
    assert [p.problem_id for p in done["addition"]] == ["demo-0", "demo-1", "demo-2", "demo-3"]


def test_resuming_with_other_settings_is_refused(tmp_path: Path, capsys):
    out = tmp_path / "results.json"
    header = {"kind": "header", "benchmark": "addition", "model": "tiny:addition", "config": {"n_samples": 8}}
    problems_path(out).write_text(json.dumps(header) + "\n")
    code = main(
        [
            "eval",
            "--model",
            "tiny:addition",
            "--benchmark",
            "builtin:addition",
            "--n",
            "4",
            "--out",
            str(out),
            "--resume",
        ]
    )
    assert code == 2
    assert "another model or settings" in capsys.readouterr().err


def test_a_bad_k_list_is_a_usage_error(capsys):
    with pytest.raises(SystemExit):
        main(["eval", "--model", "m", "--benchmark", "builtin:addition", "--k", "1,x"])
    assert "comma-separated integers" in capsys.readouterr().err
