"""Tool calls through the driver, with a real model that calls a tool: hanging tools are cut off, tools overlap."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest
import torch

from tests.trainer.environments.env_helpers import (
    CALLER_PROMPT,
    NAP_CALL,
    TIMEOUT_S,
    chain_scorer,
    tool_calling_model,
)
from trainer.environments import EpisodeLimits, MultiTurnBatch, Tool, ToolOutput
from trainer.environments.driver import Episode, run_episodes
from trainer.environments.tool_task import ToolTask
from trainer.rollout import HFRolloutEngine, SamplingParams
from trainer.samples import Sample

SAMPLE = Sample("q", CALLER_PROMPT, "5", {"solution": "5;#### 5"})


@pytest.fixture(scope="module")
def caller(tmp_path_factory: pytest.TempPathFactory) -> tuple[Any, Any]:
    return tool_calling_model(tmp_path_factory.mktemp("caller"))


@pytest.fixture
def release() -> Iterator[threading.Event]:
    """Set when the test ends, so a 'hanging' tool's thread ends too."""
    event = threading.Event()
    yield event
    event.set()


def nap_tool(run: Callable[[dict[str, Any]], ToolOutput]) -> Tool:
    return Tool("nap", "Rest a while.", {"type": "object", "properties": {}}, run, timeout_s=TIMEOUT_S)


def run(caller: tuple[Any, Any], tools: list[Tool]) -> MultiTurnBatch:
    model, tok = caller
    episodes = [Episode(CALLER_PROMPT, SAMPLE, ToolTask([tool], chain_scorer())) for tool in tools]
    return run_episodes(
        HFRolloutEngine(model, tok),
        tok,
        episodes,
        SamplingParams(max_new_tokens=64, temperature=0.3),
        torch.Generator().manual_seed(0),
        EpisodeLimits(max_turns=3, max_total_tokens=400),
    )


def test_the_model_s_call_ends_its_turn_and_the_response_is_environment_tokens(
    caller: tuple[Any, Any],
) -> None:
    out = run(caller, [nap_tool(lambda args: ToolOutput("napped"))])
    tok = caller[1]
    episode = out.episodes[0]
    first, answer = episode.turns
    assert first.finish == "stop" and first.tool_calls[0].status == "ok"
    ids = out.batch.completion_ids[0]
    assert tok.decode(ids[first.model_span[0] : first.model_span[1]]) == NAP_CALL
    response = tok.decode(ids[first.env_span[0] : first.env_span[1]])
    assert response == "\n<tool_response>\nnapped\n</tool_response>\n"
    assert out.batch.model_mask is not None
    assert out.batch.model_mask[0, first.env_span[0] : first.env_span[1]].sum() == 0
    assert first.reward is None  # a tool turn has no reward of its own
    assert episode.finish_reason == "done" and episode.score.reward == 1.0 and answer.finish == "eos"


def test_a_hanging_tool_is_cut_off_at_its_deadline_and_the_other_episodes_finish(
    caller: tuple[Any, Any], release: threading.Event
) -> None:
    hang = nap_tool(lambda args: ToolOutput(str(release.wait())))  # returns only when the test has ended
    quick = nap_tool(lambda args: ToolOutput("napped"))
    out = run(caller, [quick, hang, quick])
    hung = out.episodes[1].turns[0].tool_calls[0]
    assert hung.status == "timeout"
    assert hung.result == f"error: timed out after {TIMEOUT_S:g}s"
    assert TIMEOUT_S <= hung.seconds < 30 * TIMEOUT_S
    assert not release.is_set()  # the call was abandoned, not waited for
    assert [e.finish_reason for e in out.episodes] == ["done", "done", "done"]
    assert [e.turns[0].tool_calls[0].status for e in out.episodes] == ["ok", "timeout", "ok"]


def test_environments_step_concurrently(caller: tuple[Any, Any]) -> None:
    spans: list[tuple[float, float]] = []
    lock = threading.Lock()

    def slow(args: dict[str, Any]) -> ToolOutput:
        start = time.monotonic()
        time.sleep(TIMEOUT_S / 2)
        with lock:
            spans.append((start, time.monotonic()))
        return ToolOutput("napped")

    out = run(caller, [nap_tool(slow) for _ in range(8)])
    assert len(spans) == 8  # every episode called the tool once
    assert max(s for s, _ in spans) < min(e for _, e in spans)  # all eight calls were running at one moment
    assert all(e.finish_reason == "done" for e in out.episodes)
