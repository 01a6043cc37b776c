"""The python tool runs the model's program in the kernel-enforced sandbox, under the sandbox's own time limit."""

from __future__ import annotations

import shutil

import pytest

from tests.trainer.environments.env_helpers import chain_scorer
from trainer.environments import ModelTurn, ToolLimits, environment_factory
from trainer.environments.python_tool import PythonParams, python_tool
from trainer.environments.tool_calls import render_tool_call, run_tool_calls
from trainer.samples import Sample

pytestmark = pytest.mark.skipif(
    shutil.which("bwrap") is None,
    reason="bubblewrap (bwrap) is not installed: run `bash deploy/system-packages.sh test` (or apt-get install bubblewrap)",
)


def test_a_program_runs_in_the_sandbox_and_its_output_comes_back() -> None:
    tool = python_tool(PythonParams(wall_s=5))
    out = tool.run({"code": "import os\nprint(6 * 7, os.getuid())"})
    assert (out.status, out.text) == ("ok", "42 65534\n")  # the sandbox's uid, not ours


def test_a_program_that_never_ends_is_killed_at_the_sandbox_s_wall_clock() -> None:
    [record] = run_tool_calls(
        render_tool_call("python", {"code": "while True:\n    pass"}),
        [python_tool(PythonParams(wall_s=1))],
        ToolLimits(),
    )
    assert (record.status, record.result) == ("timeout", "error: timed out after 1s")
    assert record.seconds < 1 + 10  # ended by the sandbox, well before the driver's own deadline


def test_a_failing_program_shows_the_reason_and_the_end_of_its_stderr() -> None:
    out = python_tool(PythonParams()).run({"code": "print('before')\nimport socket\nsocket.socket()"})
    assert out.status == "error"
    assert out.text.startswith("before\nerror: ")
    assert "PermissionError" in out.text  # the sandbox's seccomp filter refused the socket


def test_the_environment_scores_the_answer_after_the_tool_turns() -> None:
    env = environment_factory("python", {"wall_s": 5}, chain_scorer())()
    [tool] = env.tools()
    env.reset(Sample("c", "(9+6)*4-5=", "55", {"solution": "15*4-5=60-5=55;#### 55"}))
    calls = run_tool_calls(render_tool_call("python", {"code": "print((9+6)*4-5)"}), [tool], ToolLimits())
    assert calls[0].result == "55\n"
    assert not env.step(ModelTurn(0, "call", calls)).done
    answer = env.step(ModelTurn(1, "#### 55", ()))
    assert answer.done and answer.reward == 1.0
