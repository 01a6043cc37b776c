"""A reward source's absent score (a judge whose endpoint refused the call) becomes a bench verdict with reward
None, valid JSON where nan is not, and a reason that says it is absent and why."""

from __future__ import annotations

import json
import math
import socket

from trainer.verifiers import VerifierResult, build_verifier
from trainer.verifiers.base import absent_result
from webapp.verification.bench import RescoreTally, Verdict, score_with, verdict_of


def closed_port() -> int:
    """A local port nothing listens on (bound, then released)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
    return port


def test_a_judge_that_cannot_be_reached_gives_an_absent_verdict_that_is_json() -> None:
    judge = build_verifier(
        "judge",
        {"base_url": f"http://127.0.0.1:{closed_port()}/v1", "model": "m", "retries": 0, "timeout_s": 2},
    )
    [verdict] = score_with(judge, [("The answer is 4.", "4")])
    assert verdict.reward is None and verdict.correct is False
    assert verdict.reason.startswith("absent: connection failed"), verdict.reason
    assert "absent" in verdict.detail
    body = json.dumps(verdict.to_json(), allow_nan=False)  # nan would raise here
    assert json.loads(body)["reward"] is None
    tally = RescoreTally()
    tally.add([{"id": 1, "step": 1, "group": 0, "sample_index": 0, "prompt": "p", "completion": "c",
                "answer": "4", "correct": True}], [verdict])  # fmt: skip
    assert tally.changed == 1 and "absent" in tally.rows[0]["reason"]
    json.dumps(tally.to_json(run_id=1, total=1), allow_nan=False)


def test_the_absence_reason_is_said_even_when_the_result_gave_its_own_reason() -> None:
    verdict = verdict_of(absent_result("judge timed out", reason="3 tries"))
    assert verdict.reward is None and verdict.reason == "absent: judge timed out (3 tries)"
    plain = verdict_of(absent_result("unparseable: no number"))
    assert plain.reason == "absent: unparseable: no number"


def test_a_scored_result_keeps_its_reward_and_a_non_finite_one_is_none() -> None:
    assert verdict_of(VerifierResult(0.75, True, {"reason": "ok"})) == Verdict(
        reward=0.75, correct=True, extracted=None, reason="ok", error=None, detail={"reason": "ok"}
    )
    odd = verdict_of(VerifierResult(math.inf, False, {}))
    assert odd.reward is None and odd.reason == "non-finite reward (inf)"
