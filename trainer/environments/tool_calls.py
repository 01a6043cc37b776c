"""The tool-call format: Hermes / Qwen's ``<tool_call>{"name": ..., "arguments": {...}}</tool_call>``.

Chosen because the chat models most RLVR runs start from (Qwen2.5/Qwen3, Hermes) were trained on it, and its
markers are plain text a small model can learn. The model's turn ends at ``</tool_call>`` (a stop string) or at
its end-of-turn token; each call's result is shown back as ``<tool_response>\\n...\\n</tool_response>``, as
Qwen's chat template renders tool messages. Anything malformed (not JSON, no name, an unknown tool, arguments
that do not fit the tool's schema, over a limit) is answered with an error response and recorded as an
``invalid`` call; it never runs.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pydantic import Field

from trainer.bounds import BoundedModel, strict_json_loads
from trainer.environments.records import ToolCallRecord
from trainer.environments.tools import Tool, call_tool, check_arguments

CALL_OPEN = "<tool_call>"
CALL_CLOSE = "</tool_call>"
RESPONSE_OPEN = "<tool_response>"
RESPONSE_CLOSE = "</tool_response>"
_CALL_JSON_DEPTH = 16


class ToolLimits(BoundedModel):
    """Bounds on what one turn's tool calls may ask and return."""

    max_calls_per_turn: int = Field(
        4, ge=1, le=32, description="Tool calls run per model turn; further calls get an error response."
    )
    max_argument_chars: int = Field(
        4096, ge=16, le=65_536, description="Longest JSON of one call (name and arguments), in characters."
    )
    max_result_chars: int = Field(
        2048,
        ge=32,
        le=65_536,
        description="Longest tool result shown to the model; a longer one is cut, with a marker saying so.",
    )


@dataclass(frozen=True)
class ParsedCall:
    """One ``<tool_call>`` block: its name and arguments, or why it cannot run (``problem``)."""

    name: str
    arguments: dict[str, Any] | None
    problem: str | None = None


def parse_tool_calls(text: str, limits: ToolLimits) -> list[ParsedCall]:
    """Every ``<tool_call>`` block of a turn, in order; past ``max_calls_per_turn`` one more entry says the rest were
    dropped. A block without its closing tag is malformed."""
    calls: list[ParsedCall] = []
    start = text.find(CALL_OPEN)
    while start != -1:
        if len(calls) == limits.max_calls_per_turn:
            problem = f"more than {limits.max_calls_per_turn} tool calls in one turn; the rest were not run"
            calls.append(ParsedCall("", None, problem))
            break
        body_start = start + len(CALL_OPEN)
        end = text.find(CALL_CLOSE, body_start)
        if end == -1:
            calls.append(ParsedCall("", None, f"{CALL_OPEN} without {CALL_CLOSE}"))
            break
        calls.append(_parse_one(text[body_start:end].strip(), limits))
        start = text.find(CALL_OPEN, end + len(CALL_CLOSE))
    return calls


def _parse_one(body: str, limits: ToolLimits) -> ParsedCall:
    if len(body) > limits.max_argument_chars:
        return ParsedCall(
            "", None, f"the call is {len(body)} characters; the limit is {limits.max_argument_chars}"
        )
    try:
        value = strict_json_loads(body, max_depth=_CALL_JSON_DEPTH)
    except ValueError as err:  # json errors and UnsafeInput (too deep, NaN, huge numbers)
        return ParsedCall("", None, f"the call is not valid JSON ({' '.join(str(err).split())[:200]})")
    if not isinstance(value, dict) or not isinstance(value.get("name"), str):
        return ParsedCall("", None, 'the call must be a JSON object {"name": ..., "arguments": {...}}')
    name: str = value["name"]
    unknown = sorted(set(value) - {"name", "arguments"})
    if unknown:
        return ParsedCall(
            name, None, f"unknown key(s) {', '.join(unknown)}; a call has only name and arguments"
        )
    arguments = value.get("arguments", {})
    if isinstance(arguments, str):  # some models write the arguments as a JSON string
        try:
            arguments = strict_json_loads(arguments, max_depth=_CALL_JSON_DEPTH)
        except ValueError:
            return ParsedCall(name, None, "arguments is a string that is not a JSON object")
    if not isinstance(arguments, dict):
        return ParsedCall(name, None, "arguments must be a JSON object")
    return ParsedCall(name, arguments)


def run_tool_calls(text: str, tools: Sequence[Tool], limits: ToolLimits) -> tuple[ToolCallRecord, ...]:
    """Parse the turn's calls and run the valid ones in order, each under its tool's deadline."""
    by_name: Mapping[str, Tool] = {t.name: t for t in tools}
    records = []
    for call in parse_tool_calls(text, limits):
        problem = call.problem
        tool = by_name.get(call.name)
        if problem is None and tool is None:
            problem = f"unknown tool {call.name!r}; the tools are: {', '.join(by_name) or 'none'}"
        if problem is None and tool is not None and call.arguments is not None:
            problem = check_arguments(tool.parameters, call.arguments)
        if problem is not None or tool is None or call.arguments is None:
            records.append(ToolCallRecord(call.name, call.arguments, f"error: {problem}", "invalid", 0.0))
            continue
        record = call_tool(tool, call.arguments)
        records.append(_capped(record, limits.max_result_chars))
    return tuple(records)


def _capped(record: ToolCallRecord, max_chars: int) -> ToolCallRecord:
    text = record.result
    if len(text) <= max_chars:
        return record
    marker = f"\n[... {len(text) - max_chars} more characters cut]"
    return ToolCallRecord(
        record.name, record.arguments, text[:max_chars] + marker, record.status, record.seconds
    )


def render_tool_responses(records: Sequence[ToolCallRecord]) -> str:
    """The tool results as the model reads them, one ``<tool_response>`` block per call, in call order."""
    return "\n".join(f"{RESPONSE_OPEN}\n{r.result}\n{RESPONSE_CLOSE}" for r in records)


def render_tool_call(name: str, arguments: dict[str, Any]) -> str:
    """A call written in the format (for prompts that show an example, and for tests)."""
    return f"{CALL_OPEN}{json.dumps({'name': name, 'arguments': arguments})}{CALL_CLOSE}"
