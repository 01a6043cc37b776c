"""Token-in, token-out on the real tiny model: the trajectory is the sampled ids and the replies' ids, nothing else."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest
import torch
from transformers import AutoModelForCausalLM, AutoTokenizer

from tests.trainer.environments.env_helpers import RecordingEngine, chain_scorer
from trainer.data.chain_arithmetic import chain_arithmetic_samples
from trainer.environments import EpisodeLimits, MultiTurnBatch, environment_factory
from trainer.environments.driver import Episode, run_episodes
from trainer.rollout import HFRolloutEngine, SamplingParams

RETRY = "No."
TURNS = 10


@pytest.fixture(scope="module")
def chain() -> tuple[Any, Any]:
    from trainer.models.tiny_model import ensure_tiny_model

    path = ensure_tiny_model("tiny:chain", log=lambda m: None)
    return AutoModelForCausalLM.from_pretrained(path), AutoTokenizer.from_pretrained(path)


def _episodes(n: int, answer: str | None = None) -> list[Episode]:
    make = environment_factory("self_correction", {"retry_message": RETRY}, chain_scorer())
    samples = chain_arithmetic_samples(n, seed=3, level="easy")
    if (
        answer is not None
    ):  # an answer the model never writes: every turn is wrong, so every episode runs to the budget
        samples = [dataclasses.replace(s, answer=answer) for s in samples]
    return [Episode(s.prompt, s, make()) for s in samples]


@pytest.fixture(scope="module")
def ten_turns(chain: tuple[Any, Any]) -> tuple[MultiTurnBatch, RecordingEngine, list[Episode]]:
    model, tok = chain
    engine = RecordingEngine(HFRolloutEngine(model, tok))
    episodes = _episodes(3, answer="-7")
    limits = EpisodeLimits(max_turns=TURNS, max_total_tokens=400)
    out = run_episodes(
        engine, tok, episodes, SamplingParams(max_new_tokens=24), torch.Generator().manual_seed(0), limits
    )
    return out, engine, episodes


def test_ten_turns_hold_exactly_the_sampled_ids_and_the_replies_tokenised_alone(
    ten_turns: tuple[MultiTurnBatch, RecordingEngine, list[Episode]], chain: tuple[Any, Any]
) -> None:
    out, engine, episodes = ten_turns
    tok = chain[1]
    reply = tok("\n" + RETRY + "\n", add_special_tokens=False)[
        "input_ids"
    ]  # the plain format around the reply
    assert len(engine.calls) == TURNS  # one engine call per round
    for row, episode in enumerate(episodes):
        prompt = tok(episode.prompt, add_special_tokens=False)["input_ids"]
        expected: list[int] = []
        for turn, (contexts, sampled) in enumerate(engine.calls):
            assert (
                contexts[row] == prompt + expected
            )  # token in: the context is the trajectory so far, as ids
            expected += sampled.completion_ids[row, : int(sampled.completion_mask[row].sum())].tolist()
            if turn < TURNS - 1:
                expected += reply
        n = int(out.batch.completion_mask[row].sum())
        assert out.batch.completion_ids[row, :n].tolist() == expected
        assert out.batch.prompt_ids[row][out.batch.prompt_mask[row].bool()].tolist() == prompt
        assert out.episodes[row].finish_reason == "turns"
        assert len(out.episodes[row].turns) == TURNS


def test_decoding_and_tokenising_the_conversation_again_would_not_give_those_ids(
    ten_turns: tuple[MultiTurnBatch, RecordingEngine, list[Episode]], chain: tuple[Any, Any]
) -> None:
    out, _, episodes = ten_turns
    tok = chain[1]
    drifted = 0
    for row, episode in enumerate(episodes):
        n = int(out.batch.completion_mask[row].sum())
        ids = out.batch.completion_ids[row, :n].tolist()
        rerendered = tok(episode.prompt + out.batch.texts[row], add_special_tokens=False)["input_ids"]
        prompt = tok(episode.prompt, add_special_tokens=False)["input_ids"]
        drifted += rerendered != prompt + ids
    # The model ends most wrong answers with its end token, and the environment's reply follows it: the text
    # (special tokens removed, as RolloutBatch.texts and chat rendering drop them) has lost those tokens.
    finishes = [t.finish for e in out.episodes for t in e.turns[:-1]]
    assert "eos" in finishes
    assert drifted > 0


def test_environment_tokens_have_mask_0_and_logprob_0_and_model_tokens_mask_1(
    ten_turns: tuple[MultiTurnBatch, RecordingEngine, list[Episode]],
) -> None:
    out, engine, _ = ten_turns
    batch = out.batch
    assert batch.model_mask is not None
    for row, episode in enumerate(out.episodes):
        for turn, (_, sampled) in zip(episode.turns, engine.calls, strict=True):
            start, end = turn.model_span
            assert batch.model_mask[row, start:end].tolist() == [1] * (end - start)
            assert torch.equal(batch.logprobs[row, start:end], sampled.logprobs[row, : end - start])
            env_start, env_end = turn.env_span
            assert env_start == end
            assert batch.model_mask[row, env_start:env_end].tolist() == [0] * (env_end - env_start)
            assert batch.logprobs[row, env_start:env_end].tolist() == [0.0] * (env_end - env_start)
            assert batch.entropies[row, env_start:env_end].tolist() == [0.0] * (env_end - env_start)
        n = int(batch.completion_mask[row].sum())
        assert batch.completion_mask[row, :n].tolist() == [1] * n  # the whole trajectory is the completion
        assert batch.model_mask[row, n:].sum() == 0
    assert (batch.logprobs[batch.model_mask.bool()] < 0).all()  # the sampled tokens' own logprobs, not zeros


def test_a_turn_reward_is_recorded_per_turn_and_the_episode_reward_is_the_last(
    ten_turns: tuple[MultiTurnBatch, RecordingEngine, list[Episode]],
) -> None:
    out = ten_turns[0]
    for episode in out.episodes:
        assert [t.reward for t in episode.turns] == [0.0] * TURNS
        assert episode.score.reward == 0.0


def test_the_token_budget_cuts_the_episode_and_says_where(chain: tuple[Any, Any]) -> None:
    model, tok = chain
    budget = 15
    out = run_episodes(
        HFRolloutEngine(model, tok),
        tok,
        _episodes(4, answer="-7"),
        SamplingParams(max_new_tokens=12),
        torch.Generator().manual_seed(1),
        EpisodeLimits(max_turns=TURNS, max_total_tokens=budget),
    )
    assert out.batch.finish_reasons == ["length"] * 4
    assert out.batch.completion_mask.sum(-1).tolist() == [budget] * 4
    for episode in out.episodes:
        last = episode.turns[-1]
        assert last.finish == "length" or last.reply_truncated
        assert max(last.model_span[1], last.env_span[1]) == budget


def test_a_right_answer_ends_the_episode_as_done(chain: tuple[Any, Any]) -> None:
    model, tok = chain
    episodes = _episodes(16)
    out = run_episodes(
        HFRolloutEngine(model, tok),
        tok,
        episodes,
        SamplingParams(max_new_tokens=40),
        torch.Generator().manual_seed(0),
        EpisodeLimits(max_turns=3, max_total_tokens=300),
    )
    done = [e for e in out.episodes if e.finish_reason == "done"]
    assert done  # the warm-started model answers some of them right within three tries
    for episode in done:
        assert episode.score.correct and episode.turns[-1].reward == 1.0
        assert (
            episode.turns[-1].env_span[0] == episode.turns[-1].env_span[1]
        )  # nothing appended after the end
    for episode in out.episodes:
        if episode.finish_reason == "turns":
            assert len(episode.turns) == 3 and not episode.score.correct


def test_an_episode_record_is_plain_json(
    ten_turns: tuple[MultiTurnBatch, RecordingEngine, list[Episode]],
) -> None:
    import json

    record = ten_turns[0].episodes[0].to_json()
    assert json.loads(json.dumps(record)) == record
    assert record["finish_reason"] == "turns" and record["turns"][0]["info"] == {"correct": False}
    assert record["turns"][0]["model_span"][0] == 0
