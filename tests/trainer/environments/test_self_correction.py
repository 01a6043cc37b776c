"""self_correction: every answer scored, a wrong one sent back, a reward per turn, the last turn's as the episode's."""

from __future__ import annotations

import pytest

from tests.trainer.environments.env_helpers import chain_scorer
from trainer.environments import ModelTurn, environment_factory
from trainer.environments.self_correction import RETRY_MESSAGE
from trainer.samples import Sample

SAMPLE = Sample("c", "(9+6)*4-5=", "55", {"solution": "15*4-5=60-5=55;#### 55"})


def test_a_wrong_answer_gets_the_retry_message_and_a_right_one_ends_the_episode() -> None:
    env = environment_factory("self_correction", {}, chain_scorer())()
    env.reset(SAMPLE)
    first = env.step(ModelTurn(0, "15*4-5=61-5=56;#### 56", ()))
    second = env.step(ModelTurn(1, "15*4-5=60-5=55;#### 55", ()))
    assert (first.text, first.reward, first.done) == (RETRY_MESSAGE, 0.0, False)
    assert (second.text, second.reward, second.done) == ("", 1.0, True)
    assert env.final_score().reward == 1.0 and env.final_score().correct
    assert env.state().turns == 2 and env.state().done
    with pytest.raises(RuntimeError, match="after the episode ended"):
        env.step(ModelTurn(2, "#### 55", ()))


def test_the_episode_reward_is_the_last_turn_s_even_after_a_right_answer_earlier_is_impossible() -> None:
    env = environment_factory("self_correction", {"retry_message": "Again."}, chain_scorer())()
    env.reset(SAMPLE)
    rewards = [
        env.step(ModelTurn(i, text, ())).reward for i, text in enumerate(["#### 1", "#### 2", "no answer"])
    ]
    assert rewards == [0.0, 0.0, 0.0]
    assert env.final_score().reward == 0.0 and not env.state().done


def test_a_new_episode_starts_clean() -> None:
    env = environment_factory("self_correction", {}, chain_scorer())()
    env.reset(SAMPLE)
    env.step(ModelTurn(0, "#### 55", ()))
    env.reset(SAMPLE)
    assert env.state().turns == 0 and not env.state().done
    assert "before the model took a turn" in env.final_score().detail["error"]
