"""Multi-turn episodes in real training steps on the tiny random model: the collect stage runs the environment,
the loss never trains the environment's tokens, turn-level credit moves the model tokens' advantages, each rollout
record carries its episode, and the config refuses what episodes cannot be combined with yet."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from tests.trainer.loop_helpers import Steps, tiny_config
from trainer.config import ExperimentConfig
from trainer.environments.records import episode_from_json
from trainer.step.loop import train

# The digit reward of tiny_config: a wrong answer (no digit) gets the retry message and another turn.
SELF_CORRECTION: dict[str, Any] = {
    "name": "self_correction",
    "params": {"retry_message": " no. "},
    "limits": {"max_turns": 3, "max_total_tokens": 24},
}


def episode_config(model_dir: Path, out_dir: Path, **environment: Any) -> ExperimentConfig:
    return tiny_config(model_dir, out_dir, environment={**SELF_CORRECTION, **environment})


def test_a_self_correction_run_masks_the_environment_and_records_each_episode(
    random_model_dir: Path, tmp_path: Path
) -> None:
    sink = Steps()
    train(episode_config(random_model_dir, tmp_path), sink, log=lambda m: None)
    assert len(sink.reports) == 2
    multi_turn = 0
    for report in sink.reports:
        for key in ("env/turns_mean", "env/done_frac", "env/turn_budget_frac", "env/tool_calls_mean"):
            assert key in report.metrics, key
        assert 1.0 <= report.metrics["env/turns_mean"] <= 3.0
        for record in report.rollouts:
            episode = episode_from_json(record.details["episode"])
            env_token = record.token_values["env_token"]
            loss_mask = record.token_values["loss_mask"]
            assert len(env_token) == len(record.token_ids)
            for turn in episode.turns:
                start, end = turn.model_span
                assert all(env_token[k] == 0.0 for k in range(start, end))
                e_start, e_end = turn.env_span
                assert all(env_token[k] == 1.0 and loss_mask[k] == 0.0 for k in range(e_start, e_end))
            assert record.rewards["environment"] == pytest.approx(episode.score.reward)
            assert record.correct == episode.score.correct
            if len(episode.turns) > 1:
                multi_turn += 1
                # a wrong answer's retry reply sits between the turns, as tokens nobody sampled
                assert episode.turns[0].env_span[1] > episode.turns[0].env_span[0]
                assert not episode.turns[0].reward
    assert multi_turn > 0  # the random model misses the digit often enough to be told so


def test_tcpo_turn_credit_changes_the_model_tokens_advantages_only(
    random_model_dir: Path, tmp_path: Path
) -> None:
    outcome, tcpo = Steps(), Steps()
    train(episode_config(random_model_dir, tmp_path / "outcome"), outcome, log=lambda m: None)
    train(
        episode_config(
            random_model_dir, tmp_path / "tcpo", turn_credit={"name": "tcpo", "params": {"weight": 1.0}}
        ),
        tcpo,
        log=lambda m: None,
    )
    first_outcome, first_tcpo = outcome.reports[0], tcpo.reports[0]
    assert first_tcpo.metrics["env/turn_scored_frac"] > 0
    assert first_tcpo.metrics["env/turn_credit_shift_abs_mean"] > 0
    assert first_outcome.metrics["env/turn_credit_shift_abs_mean"] == 0.0
    # same seed, same first step's rollouts: only the credit differs
    same = zip(first_outcome.rollouts, first_tcpo.rollouts, strict=True)
    moved = 0
    for a, b in same:
        assert a.token_ids == b.token_ids
        for k, masked in enumerate(b.token_values["loss_mask"]):
            if masked == 0.0:
                assert b.token_values["advantage"][k] == 0.0 or b.token_values["env_token"][k] == 0.0
        moved += a.token_values["advantage"] != b.token_values["advantage"]
    assert moved > 0


def test_an_asynchronous_run_collects_episodes_on_the_generators_own_policy_copy(
    random_model_dir: Path, tmp_path: Path
) -> None:
    """training.max_off_policy_steps 1: the background generator runs the episodes with its older copy, whose
    logprobs become the sampler's; the step rescores the model's tokens and masks the environment's."""
    sink = Steps()
    config = tiny_config(
        random_model_dir,
        tmp_path,
        environment=SELF_CORRECTION,
        training={"max_steps": 3, "max_off_policy_steps": 1},
    )
    train(config, sink, log=lambda m: None)
    assert [r.step for r in sink.reports] == [1, 2, 3]
    for report in sink.reports:
        assert report.metrics["env/turns_mean"] >= 1.0
        for record in report.rollouts:
            episode = episode_from_json(record.details["episode"])
            for turn in episode.turns:
                start, end = turn.env_span
                assert all(record.token_values["loss_mask"][k] == 0.0 for k in range(start, end))


def test_tool_shaping_adds_its_reward_key(random_model_dir: Path, tmp_path: Path) -> None:
    sink = Steps()
    config = episode_config(
        random_model_dir, tmp_path, tool_shaping={"cost_per_call": 0.1, "invalid_call_penalty": 0.5}
    )
    train(config, sink, log=lambda m: None)
    record = sink.reports[0].rollouts[0]
    assert "tool_shaping" in record.rewards  # self_correction has no tools: every adjustment is 0
    assert record.rewards["tool_shaping"] == 0.0


@pytest.mark.parametrize(
    ("sections", "fix"),
    [
        ({"process_reward": {}}, "remove the process_reward section"),
        ({"environment": {"name": "calculator", "turn_credit": "tcpo"}}, "gives no reward per turn"),
        (
            {"environment": {"name": "calculator", "params": {"max_expression_chars": 10**9}}},
            "max_expression_chars",
        ),
        (
            {"environment": {"name": "no_such_env"}},
            "valid names are: calculator, openenv, python, self_correction",
        ),
    ],
)
def test_the_config_refuses_what_episodes_cannot_do_yet_and_says_what_to_change(
    sections: dict[str, Any], fix: str, tmp_path: Path
) -> None:
    data: dict[str, Any] = {"environment": {"name": "self_correction"}}
    for key, value in sections.items():
        data[key] = {**data.get(key, {}), **value}
    with pytest.raises(ValidationError) as caught:
        ExperimentConfig.model_validate(data)
    assert fix in str(caught.value)
