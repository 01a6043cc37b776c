"""The ``code`` verifier: program extraction, test-case shapes, rewards, and hostile programs in a batch."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from trainer.errors import VerifierError
from trainer.samples import Sample
from trainer.verifiers import build_verifier, score_batch
from trainer.verifiers.code_exec import extract_program, outputs_match, parse_tests

SETTINGS = Path(__file__).resolve().parents[3] / "webapp" / "settings.py"
ADD_TESTS = json.dumps([{"input": "2 3\n", "output": "5\n"}, {"input": "10 -4", "output": "6"}])
ADD = "```python\na, b = map(int, input().split())\nprint(a + b)\n```"


def test_it_takes_the_last_python_fence() -> None:
    text = "first\n```python\nprint(1)\n```\nthen\n```py\nprint(2)\n```"
    assert extract_program(text, "auto") == "print(2)\n"


def test_without_a_fence_auto_takes_the_whole_completion_and_fenced_takes_nothing() -> None:
    assert extract_program("print(3)", "auto") == "print(3)"
    assert extract_program("print(3)", "fenced") is None


def test_apps_style_inputs_and_outputs_become_stdin_tests() -> None:
    assert parse_tests({"inputs": ["1\n"], "outputs": ["2\n"]}) == [{"input": "1\n", "output": "2\n"}]


def test_assert_strings_become_assert_tests() -> None:
    assert parse_tests(["assert f(1) == 2"]) == [{"assert": "assert f(1) == 2"}]
    assert parse_tests("assert f(1) == 2") == [{"assert": "assert f(1) == 2"}]


def test_malformed_test_cases_say_what_shape_is_expected() -> None:
    with pytest.raises(ValueError, match="needs 'input' and 'output'"):
        parse_tests([{"stdin": "1"}])
    with pytest.raises(ValueError, match="non-empty list"):
        parse_tests([])


def test_lines_mode_ignores_trailing_whitespace_but_not_content() -> None:
    assert outputs_match("5  \n6\n\n", "5\n6", "lines")
    assert not outputs_match("5 6", "5\n6", "lines")
    assert outputs_match("5 6", "5\n6", "tokens")


def test_a_correct_program_gets_reward_1_and_a_wrong_one_0() -> None:
    verifier = build_verifier("code", {})
    good, bad = verifier([ADD, "print(5)"], [Sample("s", "add", ADD_TESTS)] * 2)
    assert (good.reward, good.correct) == (1.0, True)
    assert good.detail["reason"] == "passed 2/2 tests"
    assert (bad.reward, bad.correct) == (0.0, False)
    assert "test 2: wrong output" in bad.detail["reason"]


def test_fraction_reward_counts_passed_tests() -> None:
    (result,) = build_verifier("code", {"reward": "fraction"})(["print(5)"], [Sample("s", "add", ADD_TESTS)])
    assert result.reward == 0.5 and result.detail["passed"] == 1


def test_assert_tests_come_from_the_meta_column() -> None:
    sample = Sample("s", "write add", None, {"tests": ["assert add(1, 2) == 3", "assert add(0, 0) == 0"]})
    (ok,) = build_verifier("code", {})(["def add(a, b):\n    return a + b"], [sample])
    (wrong,) = build_verifier("code", {})(["def add(a, b):\n    return a - b"], [sample])
    assert ok.reward == 1.0 and wrong.reward == 0.0 and "AssertionError" in wrong.detail["reason"]


def test_a_sample_without_tests_gets_an_error_saying_where_to_put_them() -> None:
    (result,) = build_verifier("code", {})(["print(1)"], [Sample("s", "q", None)])
    assert result.reward == 0.0 and "add a 'tests' column" in result.detail["error"]


def test_bad_params_are_refused_with_the_field_name() -> None:
    with pytest.raises(VerifierError, match="memory_mb"):
        build_verifier("code", {"memory_mb": 1})


@pytest.mark.slow
def test_hostile_programs_score_zero_and_scoring_goes_on() -> None:
    """A fork bomb, an infinite loop, a 10 GB allocation, a socket connect, a read of the settings file and
    of the environment each score 0 in one batch with a correct program, which still scores 1; the next
    batch (same worker pool) scores normally."""
    hostile = {
        "fork bomb": "import os\nwhile True:\n    os.fork()",
        "infinite loop": "while True:\n    pass",
        "10 GB": "x = bytearray(10 * 1024 ** 3)\nprint(5)",
        "socket": "import socket\nsocket.create_connection(('127.0.0.1', 5432), timeout=1)\nprint(5)",
        "settings": f"print(open({str(SETTINGS)!r}).read())",
        "environ": "import os\nprint(os.environ['RLVR_SECRET_KEY'])",
    }
    params = {"wall_s": 3, "cpu_s": 1}
    verifiers = [("code", build_verifier("code", params))]
    completions = [*hostile.values(), ADD]
    batch = score_batch(verifiers, [1.0], completions, [Sample("s", "add", ADD_TESTS)] * len(completions))
    assert batch.total == [0.0] * len(hostile) + [1.0]
    for detail in batch.details[: len(hostile)]:
        assert "error" not in detail["code"], detail  # the verifier itself did not fail: the program did
        assert detail["code"]["passed"] == 0
    again = score_batch(verifiers, [1.0], [ADD, "print(1)"], [Sample("s", "add", ADD_TESTS)] * 2)
    assert again.total == [1.0, 0.0]


def test_awkward_completions_score_without_raising() -> None:
    awkward = ["", "   \n\t", "ünïcödé ∑ 😀", "9" * 5000, "```python\n", "```python\nprint(5)"]
    results = build_verifier("code", {})(awkward, [Sample("s", "add", ADD_TESTS)] * len(awkward))
    assert len(results) == len(awkward)
    for result in results:
        assert 0.0 <= result.reward <= 1.0
        json.dumps(result.detail, allow_nan=False)
    assert results[0].detail["reason"] == "empty completion"
