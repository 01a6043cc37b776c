"""``python``: one tool that runs a Python program in the kernel-enforced sandbox (trainer/sandbox).

The program runs under ``run_python`` with this environment's limits; the sandbox's own wall clock kills it (status
``timeout``), and the driver's deadline for the call is that limit plus a margin for starting the sandbox. The tool
shows the program's standard output, and on failure the reason and the end of its standard error. The environment
fails when it is built, with ``SandboxUnavailable`` naming the fix, on a machine that cannot build the sandbox.
"""

from __future__ import annotations

import math
from typing import Any, ClassVar

from pydantic import Field

from trainer.environments.base import (
    ENVIRONMENTS,
    AnswerScorer,
    EnvironmentParams,
)
from trainer.environments.tool_task import ToolTask
from trainer.environments.tools import Tool, ToolOutput
from trainer.sandbox import Limits, require_sandbox, run_python

START_MARGIN_S = 10.0  # starting bwrap and the interpreter, on top of the program's wall clock
STDERR_TAIL_CHARS = 500


class PythonParams(EnvironmentParams):
    wall_s: float = Field(5.0, gt=0, le=60, description="Wall-clock limit of one program, in seconds.")
    memory_mb: int = Field(256, ge=32, le=4096, description="Address-space limit of the program, in MB.")
    output_kb: int = Field(
        64, ge=1, le=1024, description="Largest output (and file) the program may write, in KB."
    )


def python_tool(params: PythonParams) -> Tool:
    limits = Limits(
        wall_s=params.wall_s,
        cpu_s=max(1, math.ceil(params.wall_s)),
        memory_mb=params.memory_mb,
        output_kb=params.output_kb,
    )

    def run(arguments: dict[str, Any]) -> ToolOutput:
        result = run_python(arguments["code"], limits=limits)
        if result.ok:
            return ToolOutput(result.stdout)
        if result.status == "timeout":
            return ToolOutput(f"error: timed out after {params.wall_s:g}s", "timeout")
        stderr = result.stderr.strip()[-STDERR_TAIL_CHARS:]
        return ToolOutput(
            "\n".join(p for p in (result.stdout.rstrip("\n"), f"error: {result.reason}", stderr) if p),
            "error",
        )

    return Tool(
        name="python",
        description="Run a Python program and see what it prints (no network, no files kept, a few seconds).",
        parameters={
            "type": "object",
            "properties": {
                "code": {"type": "string", "description": "the program; print the results you need"}
            },
            "required": ["code"],
        },
        run=run,
        timeout_s=params.wall_s + START_MARGIN_S,
    )


@ENVIRONMENTS.register("python")
class PythonEnvironment(ToolTask):
    """A Python tool run in the sandbox; the first turn without a tool call is the answer, and the episode's reward
    is the task's verifier score of it."""

    name: ClassVar[str] = "python"
    turn_rewards: ClassVar[bool] = False
    Params: ClassVar[type[EnvironmentParams]] = PythonParams

    def __init__(self, params: PythonParams, scorer: AnswerScorer) -> None:
        require_sandbox()
        super().__init__([python_tool(params)], scorer)
