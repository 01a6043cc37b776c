"""A tool call runs under a deadline: a hanging tool is abandoned and recorded, a failing one becomes its error."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import Any

import pytest

import trainer.environments.tools as tools_module
from trainer.environments import Tool, ToolOutput
from trainer.environments.tools import call_tool, check_arguments

NO_ARGS: dict[str, Any] = {"type": "object", "properties": {}}


@pytest.fixture
def release() -> Iterator[threading.Event]:
    event = threading.Event()
    yield event
    event.set()


def test_a_hanging_call_is_cut_off_at_its_deadline(release: threading.Event) -> None:
    hang = Tool("hang", "Never returns.", NO_ARGS, lambda a: ToolOutput(str(release.wait())), timeout_s=0.2)
    record = call_tool(hang, {})
    assert (record.status, record.result) == ("timeout", "error: timed out after 0.2s")
    assert record.seconds >= 0.2
    left = [t for t in threading.enumerate() if t.name == "tool-hang"]
    assert left and all(t.daemon for t in left)  # abandoned: it cannot keep the process from exiting


def test_past_the_cap_of_abandoned_calls_a_new_call_is_refused(
    release: threading.Event, monkeypatch: pytest.MonkeyPatch
) -> None:
    hang = Tool("hang", "Never returns.", NO_ARGS, lambda a: ToolOutput(str(release.wait())), timeout_s=0.05)
    for earlier in list(tools_module._abandoned):  # calls other tests abandoned, released when those ended
        earlier.join(5)
    assert tools_module._still_running_abandoned() == 0
    monkeypatch.setattr(tools_module, "MAX_ABANDONED", 1)
    assert call_tool(hang, {}).status == "timeout"
    refused = call_tool(hang, {})
    assert refused.status == "error"
    assert "timed out and are still running; this call was not run" in refused.result


def test_a_tool_that_raises_gives_its_error_as_the_result() -> None:
    def broken(args: dict[str, Any]) -> ToolOutput:
        raise KeyError("missing")

    record = call_tool(Tool("broken", "Fails.", NO_ARGS, broken, timeout_s=5), {})
    assert (record.status, record.result) == ("error", "error: KeyError: 'missing'")


def test_arguments_are_checked_against_the_declared_types() -> None:
    schema = {"type": "object", "properties": {"n": {"type": "number"}, "flag": {"type": "boolean"}}}
    assert check_arguments(schema, {"n": 2, "flag": False}) is None
    assert check_arguments(schema, {"n": 2.5}) is None
    assert check_arguments(schema, {"n": True}) == "argument n must be a number, not bool"
    assert check_arguments(schema, {"flag": 1}) == "argument flag must be a boolean, not int"
