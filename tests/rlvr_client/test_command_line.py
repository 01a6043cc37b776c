"""The command line sent with an outside run keeps its shape but never a secret, and can be left out."""

from __future__ import annotations

import pytest

from rlvr_client.command_line import command_to_send, names_a_secret, redact_args, redact_command
from rlvr_client.run import _source_info


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["--hub_token", "abc123"], ["--hub_token", "***"]),
        (["--hub_token=abc123"], ["--hub_token=***"]),
        (["--wandb-api-key", "k"], ["--wandb-api-key", "***"]),
        (["--password", "hunter2"], ["--password", "***"]),
        (["--client_secret=s"], ["--client_secret=***"]),
        (["HF_TOKEN=abc"], ["HF_TOKEN=***"]),
        (["AWS_SECRET_ACCESS_KEY=abc"], ["AWS_SECRET_ACCESS_KEY=***"]),
        (["trainer.logger.api_key=abc"], ["trainer.logger.api_key=***"]),
    ],
)
def test_the_value_of_an_option_that_names_a_secret_is_redacted(args: list[str], expected: list[str]) -> None:
    assert redact_args(args) == expected


@pytest.mark.parametrize(
    "args",
    [
        ["--max_tokens", "512"],
        ["--tokenizer", "Qwen/Qwen2.5-0.5B"],
        ["--learning_rate=1e-6"],
        ["data.max_prompt_tokens=64"],
        ["--push_to_hub"],
    ],
)
def test_counts_and_other_options_are_left_as_they_are(args: list[str]) -> None:
    assert redact_args(args) == args


def test_a_flag_after_a_secret_option_is_not_taken_for_its_value() -> None:
    assert redact_args(["--hub_token", "--push_to_hub"]) == ["--hub_token", "--push_to_hub"]


@pytest.mark.parametrize(
    ("arg", "expected"),
    [
        ("hf_abcdefghijklmnopqrstuvwxyz0123", "***"),
        ("sk-proj-abcdefghijklmnopqrstuvwxyz", "***"),
        ("ghp_abcdefghijklmnopqrstuvwxyz0123", "***"),
        ("https://bob:pw@example.com/repo", "https://bob:***@example.com/repo"),
    ],
)
def test_a_value_that_looks_like_a_credential_is_redacted_whatever_names_it(arg: str, expected: str) -> None:
    assert redact_args(["--anything", arg]) == ["--anything", expected]


def test_a_joined_command_line_is_redacted_word_by_word_keeping_its_spacing() -> None:
    assert redact_command("python t.py --hub_token  hf_x --lr 1") == "python t.py --hub_token  *** --lr 1"


def test_the_secret_words_match_a_whole_name_part_ending() -> None:
    assert names_a_secret("hubtoken") and names_a_secret("API-KEY") and not names_a_secret("max_new_tokens")


def test_sending_the_command_is_turned_off_by_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RLVR_SEND_COMMAND", "0")
    assert command_to_send(["train.py", "--lr", "1"]) is None


def test_sending_the_command_is_turned_off_by_the_argument() -> None:
    assert command_to_send(["train.py"], send=False) is None
    assert command_to_send(["train.py", "--hub_token", "x"], send=True) == "train.py --hub_token ***"


def test_a_command_the_caller_gives_is_redacted_and_left_out_when_sending_is_off() -> None:
    given = {"command": "train.py --hub_token x", "library": "mine"}
    assert _source_info(given, "ignored")["command"] == "train.py --hub_token ***"
    assert "command" not in _source_info(given, None)
