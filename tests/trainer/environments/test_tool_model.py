"""The tool-using tiny model (tiny:chain-tool): its warm-start text is the calculator episode the multi-turn driver
builds, token for token, and the built model writes calls the calculator runs."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import pytest
import torch
from transformers import AutoModelForCausalLM, AutoTokenizer

from tests.trainer.environments.env_helpers import chain_scorer
from trainer.data.chain_arithmetic import chain_arithmetic_samples
from trainer.environments import EpisodeLimits, environment_factory
from trainer.environments.calculator import CalculatorParams, calculator_tool, evaluate
from trainer.environments.driver import Episode, run_episodes
from trainer.environments.evaluation import (
    accuracy_with_tools,
    accuracy_without_tools,
    greedy_params,
    paired_difference,
)
from trainer.environments.tool_calls import (
    CALL_CLOSE,
    ToolLimits,
    parse_tool_calls,
    render_tool_responses,
    run_tool_calls,
)
from trainer.environments.trajectory import reply_ids
from trainer.environments.turn_format import PLAIN
from trainer.models.tiny_model import BUILT_IN_MODELS, build_tiny_model, ensure_tiny_model, recipe_for
from trainer.models.tiny_recipes import TOOL_SHARE, chain_answer, chain_tool_completion
from trainer.rollout import HFRolloutEngine

MODEL = "tiny:chain-tool"


@pytest.fixture(scope="module")
def tokenizer(tmp_path_factory: pytest.TempPathFactory) -> Any:
    """The tiny models' tokenizer as every run loads it (saved, then read back by AutoTokenizer)."""
    path = build_tiny_model(tmp_path_factory.mktemp("tok"), hidden=16, layers=1, heads=1)
    return AutoTokenizer.from_pretrained(path)


def ids(tok: Any, text: str) -> list[int]:
    return list(tok(text, add_special_tokens=False)["input_ids"])


def test_the_tool_model_is_a_built_in_name_a_config_can_use() -> None:
    assert MODEL in BUILT_IN_MODELS
    assert recipe_for(MODEL).start_from == "tiny:chain-teacher"


@pytest.mark.parametrize("index", range(6))
def test_the_warm_start_text_is_the_driver_episode_token_for_token(tokenizer: Any, index: int) -> None:
    sample = chain_arithmetic_samples(6, seed=5, level="mixed")[index]
    completion = chain_tool_completion(sample.prompt)
    # the model's turn as the engine stops it: up to and including </tool_call>
    turn = completion[: completion.index(CALL_CLOSE) + len(CALL_CLOSE)]
    records = run_tool_calls(turn, [calculator_tool(CalculatorParams())], ToolLimits())
    assert [r.status for r in records] == ["ok"] and records[0].result == sample.answer
    reply = reply_ids(tokenizer, PLAIN, render_tool_responses(records), "stop")
    answer = completion[len(turn) + len(tokenizer.decode(reply)) :]
    assert answer == f"#### {sample.answer}"
    driver = ids(tokenizer, sample.prompt) + ids(tokenizer, turn) + reply + ids(tokenizer, answer)
    assert ids(tokenizer, sample.prompt + completion) == driver


def test_half_the_warm_start_problems_call_the_calculator_and_every_completion_reaches_the_answer() -> None:
    recipe = recipe_for(MODEL)
    rng = random.Random(0)
    batch = [example for step in range(1, 31) for example in recipe.batch(rng, step, 32)]
    with_call = [(p, c) for p, c in batch if parse_tool_calls(c, ToolLimits())]
    assert abs(len(with_call) / len(batch) - TOOL_SHARE) < 0.05
    for prompt, completion in batch:
        expected = str(evaluate(prompt.removesuffix("=")))  # the chain prompt is ordinary arithmetic
        assert chain_answer(completion) == expected
    for prompt, completion in with_call:
        (call,) = parse_tool_calls(completion, ToolLimits())
        assert call.arguments == {"expression": prompt.removesuffix("=")}


def test_the_paired_difference_of_hand_made_outcomes() -> None:
    diff = paired_difference([True, True, False, True], [False, True, False, False])
    # differences 1, 0, 0, 1: mean 0.5, sample sd sqrt(1/3), stderr sqrt(1/3)/2
    assert diff.mean == 0.5 and diff.n == 4
    assert diff.stderr == pytest.approx((1 / 3) ** 0.5 / 2)
    with pytest.raises(ValueError, match="equal, non-empty"):
        paired_difference([True], [])


@pytest.mark.slow
@pytest.mark.timeout(900)  # builds tiny:chain-tool (and its teacher) first if missing: minutes
def test_the_built_model_calls_the_calculator_in_the_format_it_was_taught(tmp_path: Path) -> None:
    path = ensure_tiny_model(MODEL, log=lambda m: None)
    model, tok = AutoModelForCausalLM.from_pretrained(path).eval(), AutoTokenizer.from_pretrained(path)
    engine, scorer = HFRolloutEngine(model, tok), chain_scorer()
    samples = chain_arithmetic_samples(40, seed=1234, level="mixed")
    limits = EpisodeLimits(max_turns=3, max_total_tokens=192)
    build = environment_factory("calculator", {}, scorer)
    with torch.no_grad():
        result = run_episodes(
            engine,
            tok,
            [Episode(s.prompt, s, build()) for s in samples],
            greedy_params(96),
            torch.Generator().manual_seed(0),
            limits,
        )
        with_tool = accuracy_with_tools(engine, tok, samples, build, limits, 96)
        without = accuracy_without_tools(engine, tok, samples, scorer, 192)
    ran = taught_seen = 0
    for row, (sample, episode) in enumerate(zip(samples, result.episodes, strict=True)):
        calls = [c for turn in episode.turns for c in turn.tool_calls]
        if not calls or calls[0].status != "ok":
            continue
        ran += 1
        if calls[0].arguments == {"expression": sample.prompt.removesuffix("=")} and episode.score.correct:
            # a call and answer as taught: the episode's tokens are the warm-start text and the end token
            n = int(result.batch.completion_mask[row].sum())
            taught = [*ids(tok, chain_tool_completion(sample.prompt)), tok.eos_token_id]
            assert result.batch.completion_ids[row, :n].tolist() == taught
            taught_seen += 1
    assert ran >= 10, f"only {ran} of 40 greedy episodes made a call the calculator ran"
    assert taught_seen >= 5, f"only {taught_seen} of 40 greedy episodes called and answered as taught"
    assert with_tool.tool_rate > 0.25 and without.tool_rate > 0.25  # greedy is greedy: same first turn
    assert with_tool.texts == tuple(result.batch.texts)
