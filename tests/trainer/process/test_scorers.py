"""Step scorers: the chain oracle against the verifier's first wrong step, a PRM checkpoint of either kind, and
Monte-Carlo values through the real hf engine on tiny:chain."""

from __future__ import annotations

import math
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
import torch

from trainer.process.monte_carlo import MonteCarloParams
from trainer.process.prm_head import PRMParams
from trainer.process.records import score_process
from trainer.process.scorers import (
    STEP_SCORERS,
    ScorerContext,
    StepScoreBatch,
    blamed_step,
    first_error_f1,
)
from trainer.process.steps import segment
from trainer.rollout.base import RolloutBatch, SamplingParams
from trainer.rollout.hf_engine import HFRolloutEngine
from trainer.samples import Sample
from trainer.verifiers.chain_arithmetic import ChainArithmeticParams, ChainArithmeticVerifier

PROMPT = "(9+6)*4-5="
SAMPLE = Sample("c", PROMPT, "55", {"solution": "15*4-5=60-5=55;#### 55"})
LINES = SimpleNamespace(name="lines", params={})


@pytest.fixture(scope="module")
def chain_dir() -> Path:
    from trainer.models.tiny_model import ensure_tiny_model

    return ensure_tiny_model("tiny:chain", log=lambda m: None)


@pytest.fixture(scope="module")
def tok(chain_dir: Path) -> Any:
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(chain_dir)


def _ids(tok: Any, texts: list[str]) -> list[list[int]]:
    return [[*list(tok(t, add_special_tokens=False)["input_ids"]), tok.eos_token_id] for t in texts]


def _score(
    name: str, tok: Any, texts: list[str], samples: list[Sample], params: Any, **ctx: Any
) -> tuple[Any, StepScoreBatch]:
    ids = _ids(tok, texts)
    spans = segment(ids, tok, texts, None, LINES)
    context = ScorerContext(params=params, tokenizer=tok, prompts=[s.prompt for s in samples], **ctx)
    return spans, STEP_SCORERS.get(name).score(texts, samples, spans, ids, context)


WRONG = [
    # (completion, oracle scores); the verifier's first wrong line is the first 0 (lines steps == verifier lines)
    ("15*4-5=60-5=55;#### 55", [1.0, 1.0, 1.0, 1.0]),
    ("15*4-5=61-5=56;#### 56", [1.0, 0.0, 0.0, 0.0]),  # arithmetic slip at line 1
    ("16*4-5=64-5=59;#### 59", [0.0, 0.0, 0.0, 0.0]),  # wrong from the first line
    ("15*4-5=60-6=54;#### 54", [1.0, 0.0, 0.0, 0.0]),  # an operand copied wrong (kind 'operands')
    ("15*4-5=60-5=55;#### 56", [1.0, 1.0, 1.0, 0.0]),  # every line right, the answer wrong: the answer step
    ("15*4-5=60-5;#### 55", [1.0, 1.0, 0.0]),  # a line missing: blamed where the answer starts
    ("15*4-5=60-5=55=55;#### 55", [1.0, 1.0, 1.0, 0.0, 0.0]),  # an extra line
]


def test_oracle_scores_follow_the_verifiers_first_wrong_step(tok: Any) -> None:
    texts = [t for t, _ in WRONG]
    spans, got = _score("oracle_chain", tok, texts, [SAMPLE] * len(texts), None)
    assert got.scores == [want for _, want in WRONG]
    verdicts = ChainArithmeticVerifier(ChainArithmeticParams())(texts, [SAMPLE] * len(texts))
    for (text, want), result, row in zip(WRONG, verdicts, spans, strict=True):
        wrong = result.detail["first_wrong_step"]
        if wrong is not None and wrong["kind"] != "missing":
            assert want.index(0.0) == wrong["index"], text  # the verifier's line index is the step index
        assert len(row) == len(want)


def test_oracle_is_absent_without_a_reference_scratchpad(tok: Any) -> None:
    bare = Sample("b", PROMPT, "55", {})
    _, got = _score("oracle_chain", tok, ["15*4-5=61-5=56;#### 56"], [bare], None)
    assert all(math.isnan(v) for v in got.scores[0]) and "no reference" in got.detail[0]["note"]


def test_records_name_the_blamed_and_the_oracle_step(tok: Any) -> None:
    from trainer.config.process_reward import ProcessRewardConfig

    texts = ["15*4-5=61-5=56;#### 56", "15*4-5=60-5=55;#### 55"]
    context = ScorerContext(
        params=None, tokenizer=tok, prompts=[PROMPT] * 2, chain_params=ChainArithmeticParams()
    )
    result = score_process(ProcessRewardConfig(), _ids(tok, texts), texts, None, [SAMPLE] * 2, context)
    first, second = result.detail
    assert first == {
        "spans": [[0, 7], [7, 12], [12, 15], [15, 23]],
        "scores": [1.0, 0.0, 0.0, 0.0],
        "blamed": 1,
        "oracle_first_wrong": 1,
        "scorer": "oracle_chain",
        "segmenter": "lines",
    }
    assert second["blamed"] is None and second["oracle_first_wrong"] is None
    assert result.metrics["process/oracle_f1"] == 1.0 and result.metrics["process/blamed_frac"] == 0.5
    assert result.metrics["process/steps_mean"] == 4.0


def test_blamed_and_first_error_f1() -> None:
    assert blamed_step([1.0, math.nan, 0.4, 0.0]) == 2 and blamed_step([math.nan, 0.9]) is None
    # erroneous: 1 of 2 found at the right step; right ones: 1 of 2 left unblamed -> F1 0.5
    assert first_error_f1([(1, 1), (2, 1), (None, None), (0, None)]) == pytest.approx(0.5)
    assert first_error_f1([]) is None and first_error_f1([(None, None)]) == 1.0


# --- prm ---------------------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def token_prm(chain_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A token-classification PRM on tiny:chain's weights with a fresh (random) two-label head."""
    from transformers import AutoModelForTokenClassification, AutoTokenizer
    from transformers.utils import logging

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


TEXTS = [t for t, _ in WRONG]


def test_token_classification_prm_scores_each_step_in_batches_as_alone(tok: Any, token_prm: Path) -> None:
    samples = [SAMPLE] * len(TEXTS)
    spans, batched = _score("prm", tok, TEXTS, samples, PRMParams(model=str(token_prm), micro_batch_size=3))
    assert [len(r) for r in batched.scores] == [len(r) for r in spans]
    flat = [v for row in batched.scores for v in row]
    assert all(0.0 < v < 1.0 for v in flat) and len(set(flat)) > 3
    for i, text in enumerate(TEXTS):
        _, alone = _score("prm", tok, [text], [SAMPLE], PRMParams(model=str(token_prm), micro_batch_size=1))
        assert alone.scores[0] == pytest.approx(batched.scores[i], abs=1e-5)
    # the score is the positive label's probability at the step's last token, from one forward pass
    from transformers import AutoModelForTokenClassification

    model = AutoModelForTokenClassification.from_pretrained(token_prm).eval()
    ids = list(tok(PROMPT, add_special_tokens=False)["input_ids"])
    first_step = spans[1][0]
    step_ids = _ids(tok, [TEXTS[1]])[0][first_step[0] : first_step[1]]
    with torch.no_grad():
        probs = torch.softmax(model(input_ids=torch.tensor([ids + step_ids])).logits[0, -1], -1)
    assert batched.scores[1][0] == pytest.approx(float(probs[1]), abs=1e-5)


def test_prm_failures_are_absent_not_zero(tok: Any, token_prm: Path, tmp_path: Path) -> None:
    _, missing = _score("prm", tok, TEXTS[:2], [SAMPLE] * 2, PRMParams(model=str(tmp_path / "nothing")))
    assert all(math.isnan(v) for row in missing.scores for v in row)
    assert "could not score" in missing.detail[0]["note"]
    bad_label = PRMParams(model=str(token_prm), positive_label=7)  # a head of 2 labels: every batch fails
    _, failed = _score("prm", tok, TEXTS[:2], [SAMPLE] * 2, bad_label)
    assert (
        all(math.isnan(v) for row in failed.scores for v in row)
        and "failed on a batch" in failed.detail[0]["note"]
    )


def test_causal_lm_prm_is_scored_math_shepherd_style(tok: Any, chain_dir: Path) -> None:
    from transformers import AutoModelForCausalLM

    params = PRMParams(model=str(chain_dir), kind="auto", step_tag="?", good_token="+", bad_token="-")
    spans, got = _score("prm", tok, TEXTS[:3], [SAMPLE] * 3, params)
    assert [len(r) for r in got.scores] == [len(r) for r in spans]
    assert all(0.0 < v < 1.0 for row in got.scores for v in row)
    model = AutoModelForCausalLM.from_pretrained(chain_dir).eval()
    enc = lambda s: list(tok(s, add_special_tokens=False)["input_ids"])  # noqa: E731
    text = enc(PROMPT) + enc("15*4-5=") + enc("?") + enc("61-5=") + enc("?")
    with torch.no_grad():
        logits = model(input_ids=torch.tensor([text])).logits[0, -1]
    plus, minus = enc("+")[0], enc("-")[0]
    want = torch.softmax(logits[[plus, minus]], -1)[0]
    assert got.scores[1][1] == pytest.approx(float(want), abs=1e-5)
    _, two_tokens = _score("prm", tok, TEXTS[:1], [SAMPLE], params.model_copy(update={"good_token": "++"}))
    assert all(math.isnan(v) for v in two_tokens.scores[0])  # a good_token of two tokens: absent, with why
    assert "good_token" in two_tokens.detail[0]["note"]


# --- monte carlo ---------------------------------------------------------------------------------------------------


class CountingEngine(HFRolloutEngine):
    """The real hf engine, counting its generate calls."""

    calls = 0

    def generate(
        self, prompts: list[str], params: SamplingParams, generator: torch.Generator
    ) -> RolloutBatch:
        self.calls += 1
        self.prompts = prompts
        return super().generate(prompts, params, generator)


def test_monte_carlo_continues_every_step_prefix_in_one_call(tok: Any, chain_dir: Path) -> None:
    from transformers import AutoModelForCausalLM

    model = AutoModelForCausalLM.from_pretrained(chain_dir)
    engine = CountingEngine(model, tok)
    texts = ["15*4-5=60-5=55;#### 55", "15*4-5=61-5=56;#### 56"]
    verifier = ChainArithmeticVerifier(ChainArithmeticParams())
    correct = [r.correct for r in verifier(texts, [SAMPLE] * 2)]
    _spans, got = _score(
        "monte_carlo",
        tok,
        texts,
        [SAMPLE] * 2,
        MonteCarloParams(k=2),
        engine=engine,
        sampling=SamplingParams(max_new_tokens=32, temperature=1.0),
        generator=torch.Generator().manual_seed(0),
        verifier=verifier,
        correct=correct,
    )
    assert engine.calls == 1 and len(engine.prompts) == 2 * 3 * 2  # 2 completions x 3 prefixes x k
    assert engine.prompts[0] == PROMPT + "15*4-5=" and engine.prompts[2] == PROMPT + "15*4-5=60-5="
    assert all(v in (0.0, 0.5, 1.0) for row in got.scores for v in row)
    assert [row[-1] for row in got.scores] == [1.0, 0.0]  # the last step: the completion's own verdict
    assert got.metrics["process/mc_tokens"] > 0 and got.metrics["process/mc_prefixes"] == 6
    _, capped = _score(
        "monte_carlo",
        tok,
        texts,
        [SAMPLE] * 2,
        MonteCarloParams(k=2, max_prefixes=2),
        engine=engine,
        sampling=SamplingParams(max_new_tokens=8),
        generator=torch.Generator().manual_seed(0),
        verifier=verifier,
        correct=correct,
    )
    assert engine.calls == 2 and len(engine.prompts) == 4
    assert all(math.isnan(v) for v in capped.scores[1][:-1])  # past max_prefixes: absent
