"""The tool-call format: well-formed calls run, malformed ones are answered with an error and never run."""

from __future__ import annotations

import json
from typing import Any

import pytest

from trainer.environments import Tool, ToolLimits, ToolOutput
from trainer.environments.tool_calls import (
    parse_tool_calls,
    render_tool_call,
    render_tool_responses,
    run_tool_calls,
)

CALLS: list[dict[str, Any]] = []


def _echo(args: dict[str, Any]) -> ToolOutput:
    CALLS.append(args)
    return ToolOutput(str(args["text"]) * int(args.get("times", 1)))


ECHO = Tool(
    "echo",
    "Say it again.",
    {
        "type": "object",
        "properties": {"text": {"type": "string"}, "times": {"type": "integer"}},
        "required": ["text"],
    },
    _echo,
    timeout_s=5.0,
)


def _run(text: str, **limits: int) -> list[tuple[str, str]]:
    CALLS.clear()
    return [(r.status, r.result) for r in run_tool_calls(text, [ECHO], ToolLimits(**limits))]


def test_a_well_formed_call_runs_with_its_arguments() -> None:
    text = "Let me check. " + render_tool_call("echo", {"text": "ab", "times": 2}) + " done"
    assert _run(text) == [("ok", "abab")]
    assert CALLS == [{"text": "ab", "times": 2}]


def test_arguments_written_as_a_json_string_are_read_too() -> None:
    text = '<tool_call>{"name": "echo", "arguments": "{\\"text\\": \\"x\\"}"}</tool_call>'
    assert _run(text) == [("ok", "x")]


@pytest.mark.parametrize(
    ("call", "problem"),
    [
        ("<tool_call>{name: echo}</tool_call>", "error: the call is not valid JSON"),
        (
            '<tool_call>["echo"]</tool_call>',
            'error: the call must be a JSON object {"name": ..., "arguments": {...}}',
        ),
        (
            '<tool_call>{"name": "echo", "arguments": {"text": "a"}, "id": 1}</tool_call>',
            "error: unknown key(s) id",
        ),
        (
            '<tool_call>{"name": "echo", "arguments": [1]}</tool_call>',
            "error: arguments must be a JSON object",
        ),
        (
            '<tool_call>{"name": "shell", "arguments": {}}</tool_call>',
            "error: unknown tool 'shell'; the tools are: echo",
        ),
        ('<tool_call>{"name": "echo", "arguments": {}}</tool_call>', "error: missing argument(s) text"),
        (
            '<tool_call>{"name": "echo", "arguments": {"text": "a", "rm": 1}}</tool_call>',
            "error: unknown argument(s) rm",
        ),
        (
            '<tool_call>{"name": "echo", "arguments": {"text": 3}}</tool_call>',
            "error: argument text must be a string",
        ),
        (
            '<tool_call>{"name": "echo", "arguments": {"text": "a", "times": true}}</tool_call>',
            "error: argument times",
        ),
        (
            '<tool_call>{"name": "echo", "arguments": {"text": NaN}}</tool_call>',
            "error: the call is not valid JSON",
        ),
        ("<tool_call>" + "[" * 40 + "]" * 40 + "</tool_call>", "error: the call is not valid JSON"),
        (
            '<tool_call>{"name": "echo", "arguments": {"text": "a"}}',
            "error: <tool_call> without </tool_call>",
        ),
    ],
)
def test_a_malformed_call_is_invalid_never_runs_and_says_why(call: str, problem: str) -> None:
    [(status, result)] = _run(call)
    assert status == "invalid"
    assert result.startswith(problem)
    assert CALLS == []


def test_calls_past_the_limit_of_a_turn_are_not_run() -> None:
    text = "".join(render_tool_call("echo", {"text": str(i)}) for i in range(5))
    results = _run(text, max_calls_per_turn=2)
    assert results == [
        ("ok", "0"),
        ("ok", "1"),
        ("invalid", "error: more than 2 tool calls in one turn; the rest were not run"),
    ]


def test_a_call_longer_than_the_limit_is_refused_unread() -> None:
    call = render_tool_call("echo", {"text": "x" * 100})
    [(status, result)] = _run(call, max_argument_chars=50)
    body = len(call) - len("<tool_call></tool_call>")
    assert (status, result) == ("invalid", f"error: the call is {body} characters; the limit is 50")
    assert CALLS == []


def test_a_long_result_is_cut_with_a_marker() -> None:
    [(status, result)] = _run(render_tool_call("echo", {"text": "y", "times": 100}), max_result_chars=40)
    assert status == "ok"
    assert result == "y" * 40 + "\n[... 60 more characters cut]"


def test_text_without_calls_has_none() -> None:
    assert parse_tool_calls("#### 42 </tool_call>", ToolLimits()) == []


def test_responses_are_rendered_in_call_order() -> None:
    records = run_tool_calls(
        render_tool_call("echo", {"text": "a"}) + render_tool_call("nope", {}), [ECHO], ToolLimits()
    )
    assert render_tool_responses(records) == (
        "<tool_response>\na\n</tool_response>\n"
        "<tool_response>\nerror: unknown tool 'nope'; the tools are: echo\n</tool_response>"
    )
    assert json.loads(render_tool_call("echo", {"text": "a"})[len("<tool_call>") : -len("</tool_call>")]) == {
        "name": "echo",
        "arguments": {"text": "a"},
    }
