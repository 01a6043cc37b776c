from __future__ import annotations

import pytest
from django.core.exceptions import ImproperlyConfigured

from webapp.env import env_bool, env_choice, env_int, env_list, env_str


def test_an_unset_variable_gives_the_default() -> None:
    assert env_str("X", "d", environ={}) == "d"
    assert env_bool("X", True, environ={}) is True
    assert env_int("X", 7, environ={}) == 7
    assert env_list("X", ["a"], environ={}) == ["a"]


def test_an_empty_variable_counts_as_unset() -> None:
    assert env_int("X", 7, environ={"X": "  "}) == 7


@pytest.mark.parametrize(
    ("raw", "expected"), [("1", True), ("true", True), ("YES", True), ("off", False), ("0", False)]
)
def test_booleans_accept_the_usual_words(raw: str, expected: bool) -> None:
    assert env_bool("X", not expected, environ={"X": raw}) is expected


def test_a_malformed_boolean_names_the_variable_and_the_accepted_words() -> None:
    with pytest.raises(ImproperlyConfigured, match=r"RLVR_DEBUG='maybe' is not a boolean: use one of"):
        env_bool("RLVR_DEBUG", False, environ={"RLVR_DEBUG": "maybe"})


def test_a_malformed_integer_is_refused() -> None:
    with pytest.raises(ImproperlyConfigured, match="RLVR_MAX_UPLOAD_MB='ten' is not an integer"):
        env_int("RLVR_MAX_UPLOAD_MB", 10, environ={"RLVR_MAX_UPLOAD_MB": "ten"})


def test_an_integer_below_its_minimum_is_refused() -> None:
    with pytest.raises(ImproperlyConfigured, match="must be at least 60"):
        env_int("T", 100, minimum=60, environ={"T": "5"})


def test_lists_are_split_on_commas_and_trimmed() -> None:
    assert env_list("H", [], environ={"H": "a.example, b.example"}) == ["a.example", "b.example"]


def test_a_list_with_an_empty_item_is_refused() -> None:
    with pytest.raises(ImproperlyConfigured, match="has an empty item"):
        env_list("H", [], environ={"H": "a,,b"})


def test_a_choice_outside_the_options_is_refused() -> None:
    with pytest.raises(ImproperlyConfigured, match="use one of redis, memory"):
        env_choice(
            "RLVR_CHANNEL_LAYER", "redis", ("redis", "memory"), environ={"RLVR_CHANNEL_LAYER": "kafka"}
        )
