"""Tools: functions an environment exposes to the model, their argument check, and a call cut off at a deadline.

A call runs in its own daemon thread and is waited for up to its deadline; a call still running then is
abandoned (Python cannot kill a thread), recorded as ``timeout`` and never waited for again, so a hanging tool
never stalls the run or keeps the process from exiting. At most ``MAX_ABANDONED`` abandoned calls may still be
running at once; past that a new call is refused (status ``error``) instead of piling up threads. A tool that
can stop itself should: the ``python`` tool's sandbox kills its program at its own wall-clock limit.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

from trainer.environments.records import ToolCallRecord
from trainer.verifiers.timeout_pool import describe_error

MAX_ABANDONED = 64
_JSON_TYPES: dict[str, tuple[type, ...]] = {
    "string": (str,),
    "integer": (int,),
    "number": (int, float),
    "boolean": (bool,),
    "array": (list,),
    "object": (dict,),
}


@dataclass(frozen=True)
class ToolOutput:
    """What a tool returns: its text for the model, and whether it succeeded."""

    text: str
    status: Literal["ok", "error", "timeout"] = "ok"

    @classmethod
    def error(cls, message: str) -> ToolOutput:
        return cls(f"error: {message}", "error")


@dataclass(frozen=True)
class Tool:
    """A function the model may call by name with JSON arguments.

    ``parameters`` is a JSON-schema object (``{"type": "object", "properties": {...}, "required": [...]}``), checked
    shallowly before the call (``check_arguments``): required keys present, no unknown key, each value of its
    declared ``type``. ``run`` may raise; the error becomes the result text. ``timeout_s`` is the call's deadline.
    """

    name: str
    description: str
    parameters: dict[str, Any]
    run: Callable[[dict[str, Any]], ToolOutput]
    timeout_s: float

    def schema(self) -> dict[str, Any]:
        """The function schema chat templates take (``tokenizer.apply_chat_template(..., tools=[...])``)."""
        return {
            "type": "function",
            "function": {"name": self.name, "description": self.description, "parameters": self.parameters},
        }


def check_arguments(parameters: dict[str, Any], arguments: dict[str, Any]) -> str | None:
    """Why ``arguments`` do not fit the ``parameters`` schema (None: they do)."""
    properties: dict[str, Any] = parameters.get("properties", {})
    missing = [k for k in parameters.get("required", []) if k not in arguments]
    if missing:
        return (
            f"missing argument(s) {', '.join(missing)}; the tool takes: {', '.join(properties) or 'nothing'}"
        )
    unknown = [k for k in arguments if k not in properties]
    if unknown:
        return (
            f"unknown argument(s) {', '.join(unknown)}; the tool takes: {', '.join(properties) or 'nothing'}"
        )
    for key, value in arguments.items():
        wanted = properties[key].get("type") if isinstance(properties[key], dict) else None
        types = _JSON_TYPES.get(wanted) if isinstance(wanted, str) else None
        if types is None:
            continue
        if (isinstance(value, bool) and wanted != "boolean") or not isinstance(value, types):
            return f"argument {key} must be a {wanted}, not {type(value).__name__}"
    return None


_abandoned: list[threading.Thread] = []
_abandoned_lock = threading.Lock()


def _still_running_abandoned() -> int:
    with _abandoned_lock:
        _abandoned[:] = [t for t in _abandoned if t.is_alive()]
        return len(_abandoned)


def call_tool(tool: Tool, arguments: dict[str, Any]) -> ToolCallRecord:
    """Run ``tool`` on checked ``arguments`` in a daemon thread, waiting at most ``tool.timeout_s`` seconds."""
    running = _still_running_abandoned()
    if running >= MAX_ABANDONED:
        message = (
            f"error: {running} earlier tool calls timed out and are still running; this call was not run"
        )
        return ToolCallRecord(tool.name, arguments, message, "error", 0.0)
    box: list[ToolOutput | BaseException] = []

    def target() -> None:
        try:
            box.append(tool.run(arguments))
        except BaseException as err:  # the tool's own failure becomes its result
            box.append(err)

    thread = threading.Thread(target=target, name=f"tool-{tool.name}", daemon=True)
    started = time.perf_counter()
    thread.start()
    thread.join(tool.timeout_s)
    seconds = time.perf_counter() - started
    if thread.is_alive():
        with _abandoned_lock:
            _abandoned.append(thread)
        message = f"error: timed out after {tool.timeout_s:g}s"
        return ToolCallRecord(tool.name, arguments, message, "timeout", seconds)
    outcome = box[0]
    if isinstance(outcome, BaseException):
        return ToolCallRecord(tool.name, arguments, f"error: {describe_error(outcome)}", "error", seconds)
    if not isinstance(outcome, ToolOutput):
        problem = f"error: the tool returned {type(outcome).__name__}, not ToolOutput"
        return ToolCallRecord(tool.name, arguments, problem, "error", seconds)
    return ToolCallRecord(tool.name, arguments, outcome.text, outcome.status, seconds)
