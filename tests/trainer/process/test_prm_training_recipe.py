"""The tiny chain PRM recipe on a small budget: oracle-labelled steps of tiny:chain's and tiny:chain-teacher's own
samples train a PRM whose held-out step accuracy beats the majority-class baseline (measured for these seeds: 0.817
against 0.781 on 520 held-out steps of 39 prompts, from 0.492 with the fresh head), and the folder it writes is
scored through the ``prm`` step scorer exactly as training measured it. Its first-error accuracy (0.705) is not
asserted against the constant "first step is wrong" guess: at this budget it does not reliably beat it."""

from __future__ import annotations

import dataclasses
import json
import math
from pathlib import Path
from types import SimpleNamespace

import pytest

from trainer.process.prm_head import PRMParams
from trainer.process.prm_training import METADATA_FILE, encode_example, load_token_prm, predict_steps
from trainer.process.scorers import STEP_SCORERS, ScorerContext
from trainer.process.step_labels import StepExample
from trainer.process.steps import segment, token_texts
from trainer.process.tiny_prm import RECIPE, build_chain_prm
from trainer.samples import Sample

SMALL = dataclasses.replace(RECIPE, prompts=192, epochs=3, eval_every=20)
PROMPT = "(9+6)*4-5="
SAMPLE = Sample("c", PROMPT, "55", {"solution": "15*4-5=60-5=55;#### 55"})
TEXTS = ["15*4-5=60-5=55;#### 55", "15*4-5=61-5=56;#### 56", "16*4-5=64-5=59;#### 59"]


@pytest.mark.timeout(1200)
def test_the_small_recipe_beats_the_majority_class_and_its_folder_is_a_prm(tmp_path: Path) -> None:
    out = tmp_path / "prm"
    result = build_chain_prm(out, SMALL, log=lambda m: None)
    assert result.held_out_steps >= 300 and result.train_examples >= 500
    assert result.majority_step_accuracy is not None and result.held_out_step_accuracy is not None
    assert result.held_out_step_accuracy > result.majority_step_accuracy
    assert result.initial_held_out_step_accuracy is not None
    assert result.held_out_step_accuracy > result.initial_held_out_step_accuracy + 0.2
    meta = json.loads((out / METADATA_FILE).read_text())
    assert (
        meta["source"]["scorer"] == "oracle_chain"
        and meta["held_out_step_accuracy"] == result.held_out_step_accuracy
    )

    # the prm scorer loads the folder ('auto' reads the token-classification architecture) and scores each step's end
    from transformers import AutoTokenizer

    from trainer.models.tiny_model import ensure_tiny_model

    tok = AutoTokenizer.from_pretrained(ensure_tiny_model("tiny:chain", log=lambda m: None))
    ids = [[*tok(t, add_special_tokens=False)["input_ids"], tok.eos_token_id] for t in TEXTS]
    spans = segment(ids, tok, TEXTS, None, SimpleNamespace(name="lines", params={}))
    context = ScorerContext(params=PRMParams(model=str(out)), tokenizer=tok, prompts=[PROMPT] * len(TEXTS))
    got = STEP_SCORERS.get("prm").score(TEXTS, [SAMPLE] * len(TEXTS), spans, ids, context)
    flat = [v for row in got.scores for v in row]
    assert len(flat) == sum(len(r) for r in spans) and all(0.0 < v < 1.0 for v in flat)
    # ... with the same numbers training measured with (same text, same step ends, same label)
    model, prm_tok = load_token_prm(str(out))
    tts = token_texts(ids, tok)
    examples = [
        StepExample(PROMPT, ["".join(tt.pieces[s:e]) for s, e in row], [math.nan] * len(row))
        for tt, row in zip(tts, spans, strict=True)
    ]
    mine = predict_steps(model, prm_tok, [encode_example(model, prm_tok, e, 256) for e in examples], 4)
    assert len(mine) == len(got.scores)
    for row, theirs in zip(mine, got.scores, strict=True):
        assert row == pytest.approx(theirs, abs=1e-5)
