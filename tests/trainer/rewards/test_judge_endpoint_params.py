"""The ``judge`` verifier's parameters and the secrets it reads, without a server (fast)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

import trainer.verifiers.judge_endpoint  # noqa: F401 -- registers "judge"
from trainer.errors import VerifierError
from trainer.samples import Sample
from trainer.verifiers.base import build_verifier
from trainer.verifiers.judge_endpoint import (
    DEFAULT_VERDICT_TEMPLATE,
    EndpointJudge,
    _retry_after,
    chat_completions_url,
    fill_template,
)
from trainer.verifiers.secrets import (
    config_secret_names,
    env_name,
    forget_secrets,
    provide_secrets,
    scrub,
    secret,
    secret_env,
)

BASE = {"base_url": "http://127.0.0.1:9/v1", "model": "judge"}


@pytest.fixture(autouse=True)
def no_secrets() -> Iterator[None]:
    forget_secrets()
    yield
    forget_secrets()


def refusal(**params: Any) -> str:
    with pytest.raises(VerifierError) as err:
        build_verifier("judge", {**BASE, **params})
    return str(err.value)


@pytest.mark.parametrize(
    ("url", "problem"),
    [
        ("ftp://host/v1", "must start with http:// or https://"),
        ("http://user:pw@host/v1", "must not hold credentials"),
        ("http:///v1", "has no host name"),
        ("http://host/v1?key=abc", "must not have a query"),
        ("http://host:99999/v1", "is not a valid URL"),
        ("http://h/" + "a" * 500, "at most 500 characters"),
    ],
)
def test_a_base_url_that_is_not_a_plain_http_address_is_refused(url: str, problem: str) -> None:
    assert problem in refusal(base_url=url)


def test_the_base_url_is_accepted_with_or_without_its_trailing_slash() -> None:
    assert (
        chat_completions_url("https://api.example.com/v1/") == "https://api.example.com/v1/chat/completions"
    )
    assert chat_completions_url("https://api.example.com/v1") == "https://api.example.com/v1/chat/completions"


@pytest.mark.parametrize("value", ["sk-proj-4f9a8b7c6d5e", "Bearer abc", "q8Fz2LkP0xW7mRt4Yb9Vn3"])
def test_an_api_key_in_place_of_a_secret_name_is_refused_without_repeating_it(value: str) -> None:
    message = refusal(api_key_secret=value)
    assert "looks like an API key" in message and value not in message


def test_a_secret_name_with_odd_characters_is_refused() -> None:
    assert "letters, digits" in refusal(api_key_secret="my key!")


@pytest.mark.parametrize(
    ("template", "problem"),
    [
        ("{prompt}", "must contain {completion}"),
        ("{completion} {criterion}", "unknown placeholder(s) ['criterion']"),
        ("{completion.__class__}", "unknown placeholder(s)"),
        ("{completion:>100000000}", "no format spec or conversion"),
        ("{completion!r}", "no format spec or conversion"),
        ("{completion", "not a valid format string"),
    ],
)
def test_a_prompt_template_is_checked_when_the_config_is_loaded(template: str, problem: str) -> None:
    assert problem in refusal(prompt_template=template)


def test_a_verdict_judge_must_see_the_reference_and_gets_its_own_default_template() -> None:
    verdict = {"kind": "verdict"}
    assert "must contain {answer}" in refusal(prompt_template="{completion}", parse=verdict)
    built = build_verifier("judge", {**BASE, "parse": verdict})
    assert isinstance(built, EndpointJudge) and built.params.prompt_template == DEFAULT_VERDICT_TEMPLATE  # type: ignore[attr-defined]


@pytest.mark.parametrize(
    ("params", "problem"),
    [
        ({"parse": {"kind": "score", "pattern": "(a)\\1"}}, "backreference"),
        ({"parse": {"kind": "score", "min": 5, "max": 5}}, "must be greater than parse.min"),
        ({"parse": {"kind": "verdict", "correct_pattern": "(?=x)"}}, "lookahead"),
        ({"parse": {"kind": "rank"}}, "parse"),
        ({"concurrency": 65}, "concurrency"),
        ({"retries": 11}, "retries"),
        ({"timeout_s": 0}, "timeout_s"),
        ({"api_key": "sk-x"}, "unknown parameter"),
    ],
)
def test_bad_parameters_are_refused_naming_the_field(params: dict[str, Any], problem: str) -> None:
    assert problem in refusal(**params)


def test_user_text_is_substituted_and_never_read_as_a_template() -> None:
    values = {"prompt": "{answer} {0} {completion.__class__}", "completion": "}{", "answer": "4"}
    assert fill_template("Q: {prompt} | A: {completion} | ref {answer} {{x}}", values) == (
        "Q: {answer} {0} {completion.__class__} | A: }{ | ref 4 {x}"
    )


def test_a_missing_secret_names_itself_and_both_ways_to_set_it() -> None:
    judge = build_verifier("judge", {**BASE, "api_key_secret": "openai-judge"})
    with pytest.raises(VerifierError, match=r"'openai-judge' is not set.*Secrets.*RLVR_SECRET_OPENAI_JUDGE"):
        judge.load()  # type: ignore[attr-defined]
    (result,) = judge(["4"], [Sample("s", "2+2?", "4")])  # scored without load(): absent, saying the same
    assert result.absent and "RLVR_SECRET_OPENAI_JUDGE" in result.detail["absent"]


def test_an_unreachable_endpoint_is_absent_not_an_exception() -> None:
    judge = build_verifier("judge", {**BASE, "retries": 1, "backoff_s": 0, "timeout_s": 2})
    results = judge(["4", "5"], [Sample("s", "2+2?", "4")] * 2)
    assert all(r.absent and r.detail["absent"].startswith("connection failed") for r in results)
    assert all(r.detail["absent"].endswith("(2 tries)") and r.detail["tries"] == 2 for r in results)
    assert judge([], []) == []
    mismatched = judge(["4", "5"], [Sample("s", "q", "4")])
    assert len(mismatched) == 2 and all(r.absent for r in mismatched)


def test_the_registry_comes_before_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RLVR_SECRET_JUDGE", "from-env")
    assert secret("judge") == "from-env"
    provide_secrets({"judge": "from-project"})
    assert secret("judge") == "from-project"
    assert secret_env(["judge"]) == {"RLVR_SECRET_JUDGE": "from-project"}
    assert env_name("my.judge-key") == "RLVR_SECRET_MY_JUDGE_KEY"


def test_a_launcher_passes_a_configs_secrets_to_child_processes_by_environment(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from trainer.config import config_from_dict

    judge = {"name": "judge", "params": {**BASE, "api_key_secret": "judge-key"}}
    config = config_from_dict(
        {"verifiers": [judge, {"name": "exact"}], "algorithm": {"reward_weights": [1, 0]}}
    )
    assert config_secret_names(config.verifiers) == ["judge-key"]
    provide_secrets({"judge-key": "value-1"})
    assert secret_env(config_secret_names(config.verifiers)) == {"RLVR_SECRET_JUDGE_KEY": "value-1"}
    assert "value-1" not in config.model_dump_json()


def test_provided_values_are_scrubbed_from_any_text() -> None:
    provide_secrets({"a": "s3cret-value-1"})
    assert scrub("got s3cret-value-1 and other", "other") == "got [secret] and [secret]"


def test_a_key_given_as_a_secret_name_is_refused_without_repeating_it() -> None:
    with pytest.raises(VerifierError) as err:
        provide_secrets({"sk-live-abcdef123456": "x"})
    assert "sk-live" not in str(err.value)


@pytest.mark.parametrize(("header", "seconds"), [("2", 2.0), ("3600", 30.0), ("soon", None), ("-5", 0.0)])
def test_retry_after_is_honoured_up_to_its_cap(header: str, seconds: float | None) -> None:
    assert _retry_after(header) == seconds


def test_a_verdict_judge_sent_the_score_kinds_default_template_uses_its_own_default() -> None:
    """The experiment form sends every default back: switching parse.kind to verdict must not be refused for the
    score template's {min}/{max}."""
    from trainer.verifiers.judge_endpoint import DEFAULT_SCORE_TEMPLATE, DEFAULT_VERDICT_TEMPLATE, JudgeParams

    params = JudgeParams.model_validate(
        {
            "base_url": "http://judge.example:8000/v1",
            "model": "m",
            "prompt_template": DEFAULT_SCORE_TEMPLATE,
            "parse": {"kind": "verdict"},
        }
    )
    assert params.prompt_template == DEFAULT_VERDICT_TEMPLATE
