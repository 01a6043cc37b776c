"""Evaluating a PRM checkpoint against an uploaded Math-Shepherd step-labelled file, through the command line, and
the chain command line with the oracle scorer end to end."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest

from trainer.process.evaluation import (
    _main,
    first_error_evaluation,
    score_step_examples,
    step_calibration,
    step_example_inputs,
)
from trainer.process.scorers import STEP_SCORERS, ScorerContext
from trainer.process.step_labels import read_step_labels

ROWS = [
    # (prompt, steps, labels): chain scratchpads written as Math-Shepherd rows
    ("(9+6)*4-5=", ["15*4-5=", "60-5=", "55", "#### 55"], "++++"),
    ("(9+6)*4-5=", ["15*4-5=", "61-5=", "56", "#### 56"], "+---"),
    ("7-6+3=", ["1+3=", "5", "#### 5"], "+--"),
    ("2+3*4=", ["2+12=", "14", "#### 14"], "+--"),
    ("8-2-1=", ["6-1=", "5", "#### 5"], "+++"),
]


@pytest.fixture(scope="module")
def token_prm(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A token-classification PRM on tiny:chain's weights with a fresh (random, seeded) two-label head."""
    import torch
    from transformers import AutoModelForTokenClassification, AutoTokenizer
    from transformers.utils import logging

    from trainer.models.tiny_model import ensure_tiny_model

    chain_dir = ensure_tiny_model("tiny:chain", log=lambda m: None)
    out = tmp_path_factory.mktemp("token-prm")
    torch.manual_seed(0)
    verbosity = logging.get_verbosity()
    logging.set_verbosity_error()
    try:
        model = AutoModelForTokenClassification.from_pretrained(chain_dir, num_labels=2)
    finally:
        logging.set_verbosity(verbosity)
    model.save_pretrained(out)
    AutoTokenizer.from_pretrained(chain_dir).save_pretrained(out)
    return out


@pytest.fixture()
def labels_file(tmp_path: Path) -> Path:
    path = tmp_path / "shepherd.jsonl"
    lines = []
    for prompt, steps, marks in ROWS:
        text = prompt + "\n" + "".join(f"{s} ки\n" for s in steps)
        label = prompt + "\n" + "".join(f"{s} {m}\n" for s, m in zip(steps, marks, strict=True))
        lines.append(json.dumps({"input": text, "label": label}))
    path.write_text("\n".join(lines) + "\n")
    return path


def test_a_prm_against_uploaded_labels(token_prm: Path, labels_file: Path, tmp_path: Path) -> None:
    from transformers import AutoTokenizer

    loaded = read_step_labels(labels_file, "math_shepherd")
    assert len(loaded.examples) == len(ROWS) and loaded.examples[1].labels == [1.0, 0.0, 0.0, 0.0]
    tok = AutoTokenizer.from_pretrained(token_prm)
    calls: list[tuple[int, int]] = []
    scores, refs = score_step_examples(
        loaded.examples,
        scorer="prm",
        scorer_params={"model": str(token_prm)},
        tokenizer=tok,
        batch_size=2,
        progress=lambda done, total: calls.append((done, total)),
    )
    assert calls == [(2, 5), (4, 5), (5, 5)] and refs == [None, 1, 1, 1, None]
    assert [len(r) for r in scores] == [len(ex.steps) for ex in loaded.examples]
    assert all(0.0 < v < 1.0 for row in scores for v in row)
    # the batched scores are the scorer's own on the file's steps, scored all at once
    texts, ids, spans, samples, _ = step_example_inputs(loaded.examples, tok)
    entry = STEP_SCORERS.get("prm")
    context = ScorerContext(
        params=entry.Params.model_validate({"model": str(token_prm)}),
        tokenizer=tok,
        prompts=[s.prompt for s in samples],
    )
    whole = entry.score(texts, samples, spans, ids, context).scores
    for row, want in zip(scores, whole, strict=True):
        assert row == pytest.approx(want, abs=1e-5)
    out = tmp_path / "labels.json"
    report = _main(
        ["--labels", str(labels_file), "--scorer", "prm", "--prm", str(token_prm), "--out", str(out)]
    )
    expected = first_error_evaluation(scores, refs)
    assert report["first_error"]["f1"] == pytest.approx(expected.f1)
    assert report["first_error"]["erroneous"] == 3 and report["first_error"]["correct"] == 2
    ece = step_calibration(scores, [ex.labels for ex in loaded.examples]).ece
    assert report["calibration"]["ece"] == pytest.approx(ece)
    assert json.loads(out.read_text())["examples"] == len(ROWS)
    assert not stopped_early(loaded.examples, tok, token_prm)


def stopped_early(examples: Any, tok: Any, prm: Path) -> bool:
    scores, refs = score_step_examples(
        examples, scorer="prm", scorer_params={"model": str(prm)}, tokenizer=tok, should_stop=lambda: True
    )
    return bool(scores or refs)


def test_the_chain_command_line_with_the_oracle(tmp_path: Path) -> None:
    out = tmp_path / "oracle.json"
    report = _main(["--problems", "6", "--n", "2", "--scorer", "oracle_chain", "--out", str(out)])
    assert report["first_error"]["f1"] == 1.0 and report["calibration"]["ece"] == 0.0
    curve = report["prm_best_of_n"]
    assert curve["ns"] == [1, 2] and curve["samples_per_problem"] == 2 and curve["problems"] == 6
    # with the oracle's steps, min-aggregation picks a right solution whenever the oracle says one is right
    assert curve["best_of_n"][-1] >= curve["random"][-1] - 1e-9
    assert math.isfinite(report["steps_mean"]) and json.loads(out.read_text())["mc_tokens"] == 0.0
