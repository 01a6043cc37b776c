"""The reward_watch section (trainer/config/reward_watch.py): its automatic choice of keys and its refusals."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import ValidationError

from trainer.config import config_from_dict
from trainer.config.reward_watch import RewardWatchConfig, WatchedKeys, resolve_watch
from trainer.errors import ConfigError


def watch(**fields: Any) -> RewardWatchConfig:
    return RewardWatchConfig(**fields)


def test_auto_picks_the_first_weighted_learned_source_and_the_first_weight_zero_verifier() -> None:
    sources = [("regex_format", "format"), ("reward_model", "rm"), ("judge", "judge"), ("chain_arithmetic", "chain"),
               ("exact", "exact")]  # fmt: skip
    keys = resolve_watch(watch(), sources, [0.5, 1.0, 1.0, 0.0, 0.0])
    assert keys == WatchedKeys(learned="rm", verifier="chain")
    assert (keys.learned_metric, keys.verifier_metric) == ("reward/rm_mean", "reward/chain_mean")


def test_auto_skips_a_learned_source_with_weight_zero_and_never_takes_a_learned_one_as_monitor() -> None:
    sources = [("reward_model", "rm_off"), ("judge", "j"), ("reward_model", "rm_probe"), ("exact", "exact")]
    assert resolve_watch(watch(), sources, [0.0, 1.0, 0.0, 0.0]) == WatchedKeys(learned="j", verifier="exact")


def test_auto_has_no_watch_without_a_learned_source_or_without_a_monitor() -> None:
    assert resolve_watch(watch(), [("exact", "exact"), ("numeric", "numeric")], [1.0, 0.0]) is None
    assert resolve_watch(watch(), [("reward_model", "rm"), ("exact", "exact")], [1.0, 1.0]) is None


def test_enabled_false_turns_the_watch_off() -> None:
    assert (
        resolve_watch(watch(enabled=False), [("reward_model", "rm"), ("exact", "exact")], [1.0, 0.0]) is None
    )


def test_enabled_true_without_a_monitor_says_what_to_add() -> None:
    with pytest.raises(ValueError, match=r"monitor verifier.*weight 0"):
        resolve_watch(watch(enabled=True), [("reward_model", "rm"), ("exact", "exact")], [1.0, 1.0])
    with pytest.raises(ValueError, match="learned reward source"):
        resolve_watch(watch(enabled=True), [("exact", "exact")], [0.0])


def test_named_keys_may_be_any_verifiers() -> None:
    sources = [("regex_format", "length_rm"), ("chain_arithmetic", "chain")]
    assert resolve_watch(watch(learned="length_rm", verifier="chain"), sources, [1.0, 0.0]) == WatchedKeys(
        "length_rm", "chain"
    )


def base_config(**extra: Any) -> dict[str, Any]:
    return {
        "verifiers": [
            {"name": "regex_format", "label": "proxy", "params": {"pattern": "[0-9]"}},
            {"name": "chain_arithmetic"},
        ],
        "algorithm": {"reward_weights": [1.0, 0.0]},
        **extra,
    }


def test_a_config_names_its_watched_keys() -> None:
    cfg = config_from_dict(base_config(reward_watch={"learned": "proxy", "window": 4}))
    assert cfg.watched_rewards == WatchedKeys(learned="proxy", verifier="chain_arithmetic")


def test_a_config_naming_an_unknown_key_is_refused_with_the_valid_ones() -> None:
    with pytest.raises(
        ConfigError, match=r"reward_watch.learned 'rm' is not a verifier's key \(proxy, chain_arithmetic\)"
    ):
        config_from_dict(base_config(reward_watch={"learned": "rm"}))
    with pytest.raises(ConfigError, match=r"reward_watch\.verifier 'gold'"):
        config_from_dict(base_config(reward_watch={"learned": "proxy", "verifier": "gold"}))


def test_a_config_watching_a_key_against_itself_is_refused() -> None:
    with pytest.raises(ConfigError, match="both 'proxy'"):
        config_from_dict(base_config(reward_watch={"learned": "proxy", "verifier": "proxy"}))


def test_a_config_requiring_a_watch_it_cannot_have_is_refused() -> None:
    with pytest.raises(ConfigError, match=r"reward_watch\.enabled is true"):
        config_from_dict(base_config(reward_watch={"enabled": True}))


def test_the_window_and_thresholds_are_bounded() -> None:
    for bad in (
        {"window": 2},
        {"window": 10**6},
        {"min_rise": -0.1},
        {"min_fall": float("inf")},
        {"extra": 1},
    ):
        with pytest.raises(ValidationError):
            RewardWatchConfig(**bad)


def test_the_default_config_has_no_watch() -> None:
    assert config_from_dict({}).watched_rewards is None


def test_a_config_with_a_reward_model_and_a_weight_zero_verifier_is_watched_without_naming_them() -> None:
    cfg = config_from_dict(
        {
            "verifiers": [
                {"name": "reward_model", "label": "rm", "params": {"model": "tiny:chain"}},
                {"name": "chain_arithmetic"},
            ],
            "algorithm": {"reward_weights": [1.0, 0.0]},
        }
    )
    assert cfg.watched_rewards == WatchedKeys(learned="rm", verifier="chain_arithmetic")
