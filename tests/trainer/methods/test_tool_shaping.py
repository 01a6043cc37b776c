"""Tool-call shaping (trainer/methods/tool_shaping.py): hand-computed adjustments and metrics from real episode
records (trainer/environments/records.py), the validity reward's cap, defaults that change nothing, and bounds."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from trainer.environments.records import EpisodeRecord, ToolCallRecord, ToolStatus, TurnRecord
from trainer.methods.tool_shaping import ToolShapingParams, tool_shaping
from trainer.methods.views import EpisodeView
from trainer.verifiers.base import VerifierResult


def call(status: ToolStatus) -> ToolCallRecord:
    return ToolCallRecord(
        name="" if status == "invalid" else "calculator",
        arguments=None if status == "invalid" else {"expression": "1+1"},
        result="2" if status == "ok" else f"the call ended: {status}",
        status=status,
        seconds=0.0 if status == "invalid" else 0.01,
    )


def episode(*turns: Sequence[ToolStatus]) -> EpisodeRecord:
    """One episode whose model turns made calls of these statuses, two tokens a turn and one of reply."""
    records = tuple(
        TurnRecord(
            model_span=(3 * k, 3 * k + 2),
            env_span=(3 * k + 2, 3 * k + 3),
            finish="stop",
            reward=None,
            tool_calls=tuple(call(s) for s in statuses),
        )
        for k, statuses in enumerate(turns)
    )
    return EpisodeRecord(records, "done", VerifierResult(reward=1.0, correct=True))


def batch() -> list[EpisodeView]:
    return [
        episode(["ok", "ok"], ["ok", "invalid"], []),  # 3 ok, 1 invalid; the last turn answers
        episode(["timeout"], ["error"]),
        episode([]),  # answered without a call
    ]


EVERY_TERM = ToolShapingParams(
    valid_call_reward=0.5,
    max_rewarded_calls=2,
    invalid_call_penalty=1.0,
    error_penalty=0.25,
    timeout_penalty=0.3,
    cost_per_call=0.1,
)


def test_every_term_adds_up_per_episode_by_hand() -> None:
    out = tool_shaping(batch(), EVERY_TERM)
    first = 0.5 * 2 - 1.0 * 1 - 0.1 * 4  # 3 ok calls, 2 rewarded; 1 invalid; 4 calls
    second = -0.3 - 0.25 - 0.1 * 2
    assert out.adjustments == pytest.approx([first, second, 0.0])
    assert [dict(c) for c in out.counts] == [{"ok": 3, "invalid": 1}, {"timeout": 1, "error": 1}, {}]


def test_the_metrics_are_calls_per_episode_and_shares_of_all_calls() -> None:
    out = tool_shaping(batch(), EVERY_TERM)
    assert out.metrics == pytest.approx(
        {
            "env/tool_calls_mean": 6 / 3,
            "env/tool_invalid_frac": 1 / 6,
            "env/tool_error_frac": 1 / 6,
            "env/tool_timeout_frac": 1 / 6,
            "env/tool_reward_mean": ((0.5 * 2 - 1.0 - 0.4) + (-0.3 - 0.25 - 0.2)) / 3,
        }
    )


def test_the_defaults_change_no_reward_but_still_measure_the_calls() -> None:
    params = ToolShapingParams()
    out = tool_shaping(batch(), params)
    assert not params.active and out.adjustments == [0.0, 0.0, 0.0]
    assert out.metrics["env/tool_calls_mean"] == 2.0 and out.metrics["env/tool_reward_mean"] == 0.0


def test_the_validity_reward_is_capped_so_calling_more_does_not_pay() -> None:
    spammy, single = episode(["ok"] * 5), episode(["ok"])
    capped = tool_shaping([spammy, single], ToolShapingParams(valid_call_reward=0.5))  # default cap: 1
    assert capped.adjustments == [0.5, 0.5]
    with_cost = tool_shaping([spammy, single], ToolShapingParams(valid_call_reward=0.5, cost_per_call=0.1))
    assert with_cost.adjustments == pytest.approx([0.0, 0.4])
    off = ToolShapingParams(valid_call_reward=0.5, max_rewarded_calls=0)
    assert not off.active and tool_shaping([spammy], off).adjustments == [0.0]


def test_no_episodes_or_no_calls_give_zero_metrics() -> None:
    assert set(tool_shaping([], EVERY_TERM).metrics.values()) == {0.0}
    out = tool_shaping([episode([]), episode()], EVERY_TERM)
    assert out.adjustments == [0.0, 0.0] and out.metrics["env/tool_invalid_frac"] == 0.0


@pytest.mark.parametrize(
    ("raw", "field"),
    [
        ({"valid_call_reward": -0.1}, "valid_call_reward"),
        ({"invalid_call_penalty": 101}, "invalid_call_penalty"),
        ({"timeout_penalty": -1}, "timeout_penalty"),
        ({"cost_per_call": float("inf")}, "cost_per_call"),
        ({"max_rewarded_calls": 65}, "max_rewarded_calls"),
        ({"tool_bonus": 1.0}, "tool_bonus"),
    ],
)
def test_out_of_range_or_unknown_params_are_refused(raw: dict[str, object], field: str) -> None:
    with pytest.raises(ValueError, match=field):
        ToolShapingParams.model_validate(raw)


def test_a_penalty_is_given_as_a_magnitude_and_lowers_the_reward() -> None:
    out = tool_shaping([episode(["invalid", "invalid"])], ToolShapingParams(invalid_call_penalty=0.2))
    assert out.adjustments == pytest.approx([-0.4])


def test_an_unknown_status_is_refused() -> None:
    odd = ToolCallRecord(name="calculator", arguments={}, result="", status="skipped", seconds=0.0)  # type: ignore[arg-type]
    record = EpisodeRecord(
        (TurnRecord((0, 1), (1, 2), "stop", None, tool_calls=(odd,)),), "done", VerifierResult(1.0, True)
    )
    with pytest.raises(ValueError, match=r"unknown tool call status \['skipped'\]"):
        tool_shaping([record], EVERY_TERM)
