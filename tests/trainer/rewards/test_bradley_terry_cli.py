"""``rlvr train-rm``: a pairs file trains a reward model folder; a bad file is one clear message and exit code 2."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from trainer.cli import main


def _write(path: Path, rows: list[dict[str, object]]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def test_a_pairs_file_trains_a_reward_model_folder(
    random_model_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rows = [{"prompt": f"{i}+1=", "chosen": str(i + 1), "rejected": f"{i + 2}?"} for i in range(20)]
    pairs = _write(tmp_path / "pairs.jsonl", rows)
    out = tmp_path / "rm"
    argv = ["train-rm", "--pairs", str(pairs), "--base-model", str(random_model_dir), "--out", str(out)]
    assert main([*argv, "--max-length", "16", "--held-out-frac", "0.2"]) == 0
    assert capsys.readouterr().out.strip().endswith(str(out))
    assert (out / "model.safetensors").exists() and (out / "rlvr_reward_model.json").exists()


def test_a_bad_pairs_file_is_one_clear_error(
    random_model_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pairs = _write(tmp_path / "pairs.jsonl", [{"prompt": "q", "chosen": "a"}])
    argv = [
        "train-rm",
        "--pairs",
        str(pairs),
        "--base-model",
        str(random_model_dir),
        "--out",
        str(tmp_path / "rm"),
    ]
    assert main(argv) == 2
    assert "line 1 has no 'rejected' field" in capsys.readouterr().err
    assert main(["train-rm", "--pairs", str(pairs)]) == 2
    assert "--recipe chain, or all of --pairs, --base-model and --out" in capsys.readouterr().err
