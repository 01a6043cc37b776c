"""The ``judge`` reward source against a real OpenAI-compatible server: vLLM's server (what ``vllm serve`` runs),
started by this module from vLLM's CPU environment on the tiny model, with a fault-injecting proxy before it.

The tiny model answers ``a+b=`` with digits, so a pass-through chat template and a digit pattern make its greedy
reply a parseable score for some inputs and not for others; every assertion compares with what the server itself
answers. The server requires the API key, so a judge that loses it gets a real 401.
"""

from __future__ import annotations

import json
import logging
import math
import secrets
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

import trainer.verifiers.judge_endpoint  # noqa: F401 -- registers "judge"
from tests.trainer.rewards.vllm_server import SERVED_NAME, FaultProxy, VLLMServer, free_port
from trainer.samples import Sample
from trainer.verifiers.base import VerifierResult, build_verifier
from trainer.verifiers.judge_endpoint import EndpointJudge
from trainer.verifiers.secrets import forget_secrets, provide_secrets

pytestmark = pytest.mark.slow
API_KEY = "judge-test-" + secrets.token_urlsafe(24)  # unique: found anywhere but the header, it leaked
SECRET = "judge-key"
SUMS = ["12+34=", "57+8=", "90+11=", "3+66=", "5+5=", "40+2=", "81+19=", "7+70="]


@pytest.fixture(scope="module")
def server(warm_model_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[VLLMServer]:
    served = VLLMServer(warm_model_dir, tmp_path_factory.mktemp("vllm-serve"), API_KEY)
    yield served
    served.close()


@pytest.fixture(scope="module")
def proxy(server: VLLMServer) -> Iterator[FaultProxy]:
    faulty = FaultProxy(server.base_url, hang_s=3.0)
    yield faulty
    faulty.close()


@pytest.fixture(autouse=True)
def key() -> Iterator[None]:
    provide_secrets({SECRET: API_KEY})
    yield
    forget_secrets()


def judge(base_url: str, **params: Any) -> EndpointJudge:
    built = build_verifier(
        "judge",
        {
            "base_url": base_url,
            "model": SERVED_NAME,
            "api_key_secret": SECRET,
            "prompt_template": "{completion}",
            "parse": {"kind": "score", "pattern": r"^(\d+)$", "min": 0, "max": 99},
            "max_tokens": 8,
            "backoff_s": 0.01,
            **params,
        },
    )
    assert isinstance(built, EndpointJudge)
    built.load()
    return built


def greedy_reply(server: VLLMServer, text: str) -> str:
    """What the server itself answers to ``text`` (the judge's calls must read the same)."""
    body = {
        "model": SERVED_NAME,
        "messages": [{"role": "user", "content": text}],
        "max_tokens": 8,
        "temperature": 0,
    }
    reply = httpx.post(
        server.base_url + "/chat/completions",
        json=body,
        headers={"Authorization": f"Bearer {API_KEY}"},
        timeout=60,
    )
    reply.raise_for_status()
    return str(reply.json()["choices"][0]["message"]["content"])


def score(
    verifier: EndpointJudge, completions: list[str], answers: list[str] | None = None
) -> list[VerifierResult]:
    samples = [Sample(f"s{i}", "q", None if answers is None else answers[i]) for i in range(len(completions))]
    return verifier(completions, samples)


def test_a_score_judge_reads_the_servers_greedy_reply_as_a_score_or_absent(
    server: VLLMServer, proxy: FaultProxy
) -> None:
    proxy.plan([])
    results = score(judge(proxy.base_url), SUMS)
    assert proxy.calls == len(SUMS)
    parsed = 0
    for text, result in zip(SUMS, results, strict=True):
        reply = greedy_reply(server, text)
        assert result.detail["tries"] == 1 and result.detail["latency_s"] > 0
        if reply.isdigit() and int(reply) <= 99:
            parsed += 1
            assert not result.absent and result.detail["extracted"] == int(reply)
            assert result.reward == pytest.approx(int(reply) / 99)
            assert result.correct == (int(reply) / 99 > 0.5)
        else:
            assert result.absent and math.isnan(result.reward)
            assert result.detail["absent"].startswith("unparseable") and result.detail["output"] == reply
    assert 0 < parsed < len(SUMS), "the tiny model should answer some sums within 0-99 and some above"


def test_a_verdict_judge_compares_its_reply_with_the_reference(server: VLLMServer, proxy: FaultProxy) -> None:
    verdict = {"kind": "verdict", "correct_pattern": "^4", "incorrect_pattern": "^[0-35-9]"}
    completions, answers = ["34", "8", "2", "6"], ["12", "57", "40", "40"]
    results = score(
        judge(proxy.base_url, prompt_template="{answer}+{completion}=", parse=verdict), completions, answers
    )
    for completion, answer, result in zip(completions, answers, results, strict=True):
        reply = greedy_reply(server, f"{answer}+{completion}=")
        if reply[:1].isdigit():
            assert not result.absent and result.correct == reply.startswith("4")
            assert result.reward == (1.0 if reply.startswith("4") else 0.0)
        else:
            assert result.absent and result.detail["absent"] == "unparseable: neither verdict pattern matches"
    (no_reference,) = score(
        judge(proxy.base_url, prompt_template="{answer}{completion}", parse=verdict), ["34"]
    )
    assert no_reference.absent and "no reference answer" in no_reference.detail["absent"]


def test_a_500_is_retried_and_the_next_reply_is_scored(proxy: FaultProxy) -> None:
    proxy.plan(["500", "500"])
    (result,) = score(judge(proxy.base_url, retries=2), ["12+34="])
    assert not result.absent and result.detail["tries"] == 3 and proxy.calls == 3


def test_a_429_waits_for_its_retry_after(proxy: FaultProxy) -> None:
    proxy.plan(["429"])
    (result,) = score(judge(proxy.base_url, retries=1), ["12+34="])
    assert not result.absent and result.detail["tries"] == 2
    assert result.detail["latency_s"] >= 1.0  # Retry-After: 1, though the backoff alone is 0.01 s


def test_a_500_on_every_try_is_absent_naming_the_status_and_the_tries(proxy: FaultProxy) -> None:
    proxy.plan([], then="500")
    (result,) = score(judge(proxy.base_url, retries=2), ["12+34="])
    assert result.absent and math.isnan(result.reward) and not result.correct
    assert result.detail["absent"].startswith("HTTP 500 Internal Server Error")
    assert result.detail["absent"].endswith("(3 tries)") and proxy.calls == 3


def test_an_endpoint_that_hangs_is_absent_within_the_timeout_bound(proxy: FaultProxy) -> None:
    proxy.plan([], then="hang")
    started = time.monotonic()
    results = score(judge(proxy.base_url, timeout_s=0.5, retries=1, concurrency=4), SUMS[:4])
    elapsed = time.monotonic() - started
    assert all(r.absent and r.detail["absent"] == "timeout after 0.5 s (2 tries)" for r in results)
    assert elapsed < 2 * 0.5 + 0.01 + 1.5, (
        elapsed
    )  # two tries of 0.5 s and a backoff, in parallel, plus slack
    assert proxy.calls == 8


@pytest.mark.parametrize(
    ("fault", "reason"),
    [
        ("garbage", "unparseable: the reply is not JSON: <html>this is not JSON</html>"),
        ("no_choices", "unparseable: the reply has no choices[0].message.content"),
        ("404", 'HTTP 404 Not Found: {"error": "injected fault"}'),
    ],
)
def test_garbage_and_client_errors_are_absent_at_once_without_retries(
    proxy: FaultProxy, fault: str, reason: str
) -> None:
    proxy.plan([], then=fault)
    (result,) = score(judge(proxy.base_url, retries=3), ["12+34="])
    assert result.absent and result.detail["absent"].startswith(reason)
    assert result.detail["tries"] == 1 and proxy.calls == 1


def test_the_server_refuses_a_judge_without_the_key_and_it_is_not_retried(server: VLLMServer) -> None:
    (result,) = score(judge(server.base_url, api_key_secret=None, retries=3), ["12+34="])
    assert result.absent and result.detail["absent"].startswith("HTTP 401") and result.detail["tries"] == 1


def test_the_key_can_come_from_the_environment_for_rlvr_train(
    server: VLLMServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("RLVR_SECRET_MY_JUDGE_KEY", API_KEY)
    (result,) = score(judge(server.base_url, api_key_secret="my-judge.key"), ["12+34="])
    assert not result.absent, result.detail


def test_the_key_reaches_the_endpoint_in_its_header_and_nowhere_else(
    server: VLLMServer,
    proxy: FaultProxy,
    caplog: pytest.LogCaptureFixture,
    capsys: pytest.CaptureFixture[str],
) -> None:
    caplog.set_level(logging.DEBUG)
    proxy.plan(["ok", "500", "echo_auth", "garbage", "no_choices", "404", "hang", "429"], then="ok")
    verifier = judge(proxy.base_url, retries=0, timeout_s=0.5, concurrency=1)
    results = score(verifier, SUMS)
    unreachable = score(judge(f"http://127.0.0.1:{free_port()}/v1", retries=1), ["1+1="])
    assert proxy.authorizations == [f"Bearer {API_KEY}"] * len(SUMS)  # the key did travel, in the header
    assert not results[0].absent and all(r.absent for r in results[1:7])
    echoed = results[2].detail["absent"]
    assert echoed.startswith("HTTP 500") and "Bearer [secret]" in echoed  # a server that echoes it: scrubbed
    stored = json.dumps([r.detail for r in results + unreachable])
    captured = capsys.readouterr()
    for place in (stored, caplog.text, captured.out, captured.err, repr(verifier)):
        assert API_KEY not in place


def _half_failing_run(warm_model_dir: Path, out: Path, proxy: FaultProxy, **absence: Any) -> Any:
    from tests.trainer.loop_helpers import tiny_config

    proxy.every_second_call("500")
    params = {
        "base_url": proxy.base_url,
        "model": SERVED_NAME,
        "api_key_secret": SECRET,
        "prompt_template": "{completion}{answer}",
        # Every reply parses (CORRECT when it starts with a digit), so the absent scores are the failed calls.
        "parse": {"kind": "verdict", "correct_pattern": r"^\d", "incorrect_pattern": r"^(?:\D|$)"},
        "retries": 0,  # every second call fails for good: half the step's scores are absent
        "max_tokens": 8,
    }
    return tiny_config(
        warm_model_dir,
        out,
        verifiers=[{"name": "judge", "label": "rm", "params": params}],
        reward_absence=absence,
        training={"max_steps": 2},
    )


def test_a_judge_failing_half_its_calls_trains_on_the_scored_half_and_the_metrics_say_so(
    warm_model_dir: Path, proxy: FaultProxy, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tests.trainer.loop_helpers import Steps
    from trainer.step.loop import train

    monkeypatch.setenv("OMP_NUM_THREADS", "1")
    steps = Steps()
    result = train(_half_failing_run(warm_model_dir, tmp_path, proxy, mode="drop"), steps, log=lambda _: None)
    assert result.status == "succeeded" and len(steps.reports) == 2
    for report in steps.reports:
        rows = report.rollouts
        absent = [r for r in rows if r.rewards["rm"] is None]
        assert len(rows) == 16 and len(absent) == 8  # every second call of the step's 16
        assert all(r.details["rm"]["absent"].startswith("HTTP 500") for r in absent)
        assert report.metrics["reward/rm_absent_frac"] == 0.5
        assert report.metrics["reward/dropped_frac"] == report.metrics["reward/rm_absent_frac"]
        assert report.metrics["reward/rm_latency_s"] > 0
        assert all(r.advantage == 0 for r in absent)  # dropped: out of the group statistics and the loss
    assert proxy.authorizations and set(proxy.authorizations) == {f"Bearer {API_KEY}"}


def test_a_judge_failing_half_its_calls_fails_the_run_above_fail_above(
    warm_model_dir: Path, proxy: FaultProxy, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from trainer.errors import RewardSourceError
    from trainer.step.loop import train

    monkeypatch.setenv("OMP_NUM_THREADS", "1")
    config = _half_failing_run(warm_model_dir, tmp_path, proxy, mode="fail", fail_above=0.3)
    with pytest.raises(
        RewardSourceError, match=r"reward source 'rm' had no score for \d+% of step 1's samples"
    ) as err:
        train(config, log=lambda _: None)
    assert "reward_absence.fail_above (0.3)" in str(err.value) and "HTTP 500" in str(err.value)
    assert API_KEY not in str(err.value)
