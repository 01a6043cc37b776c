"""The chain_arithmetic verifier: final-answer reward, first wrong step in the detail, never raises."""

import json
import time

import pytest

from trainer.data.chain_arithmetic import chain_arithmetic_levels, chain_arithmetic_samples
from trainer.errors import VerifierError
from trainer.samples import Sample
from trainer.verifiers import VERIFIERS, build_verifier

SOLUTION = "15*4-5=60-5=55;#### 55"
SAMPLE = Sample("c", "(9+6)*4-5=", "55", {"solution": SOLUTION})


def score(completion: str, sample: Sample = SAMPLE) -> dict:
    (result,) = build_verifier("chain_arithmetic")([completion], [sample])
    json.dumps(result.detail, allow_nan=False)
    return {"reward": result.reward, "correct": result.correct, **result.detail}


def test_it_is_registered():
    assert "chain_arithmetic" in VERIFIERS.names()


@pytest.mark.parametrize("level", chain_arithmetic_levels())
def test_every_reference_solution_scores_one_with_no_wrong_step(level: str):
    samples = chain_arithmetic_samples(300, seed=0, level=level)
    results = build_verifier("chain_arithmetic")([s.meta["solution"] for s in samples], samples)
    assert all(r.reward == 1.0 and r.correct for r in results)
    assert all(r.detail["first_wrong_step"] is None for r in results)
    assert all(r.detail["steps_right"] == r.detail["steps_expected"] for r in results)
    assert all(
        r.detail["steps_expected"] == s.meta["operands"] - 1 for r, s in zip(results, samples, strict=True)
    )


def test_a_wrong_middle_result_is_named_with_its_expected_and_written_result():
    detail = score("15*4-5=61-5=56;#### 56")
    assert detail["reward"] == 0.0 and detail["extracted"] == "56"
    assert detail["first_wrong_step"] == {
        "index": 1,
        "expected": "60",
        "expected_step": "60-5",
        "written": "61",
        "written_step": "61-5",
        "kind": "arithmetic",
    }
    assert detail["steps_right"] == 1


def test_a_wrong_step_is_reported_even_when_the_final_answer_is_right():
    detail = score("15*4-5=61-5=55;#### 55")
    assert detail["reward"] == 1.0
    assert detail["first_wrong_step"]["index"] == 1


@pytest.mark.parametrize("line", ["15*3-5", "15*4", "15*4-5+2", "15-4-5"])
def test_a_mis_copied_operand_or_operator_is_an_operand_error(line: str):
    wrong = score(f"{line}=40;#### 40")["first_wrong_step"]
    assert (wrong["index"], wrong["kind"]) == (0, "operands")
    assert (wrong["expected"], wrong["written"], wrong["written_step"]) == ("15", "15", line)


def test_parentheses_do_not_count():
    assert score("(15*4-5)=(60-5)=55;#### 55")["first_wrong_step"] is None


def test_missing_extra_and_unreadable_steps_are_named():
    missing = score("15*4-5;#### 55")["first_wrong_step"]
    assert (missing["index"], missing["kind"], missing["written"]) == (1, "missing", None)
    extra = score("15*4-5=60-5=55=55+0;#### 55")["first_wrong_step"]
    assert (extra["index"], extra["kind"], extra["written_step"]) == (3, "extra", "55+0")
    unreadable = score("15*4-5=sixty minus five=55;#### 55")["first_wrong_step"]
    assert (unreadable["index"], unreadable["kind"], unreadable["written_step"]) == (
        1,
        "unreadable",
        "sixty minus five",
    )


def test_newlines_spaces_and_x_for_times_are_read():
    detail = score("15 x 4 - 5\n60 - 5\n55\n#### 55")
    assert detail["reward"] == 1.0 and detail["first_wrong_step"] is None


def test_only_the_first_marker_counts():
    assert score("15*4-5=60-5=55;#### 54 #### 55")["reward"] == 0.0
    assert score(SOLUTION + "<eos>garbage #### 7")["reward"] == 1.0


@pytest.mark.parametrize(
    ("completion", "reason"),
    [
        ("15*4-5=60-5=55;55", "no final answer"),
        ("15*4-5=60-5=55;#### fifty-five", "no integer after '####'"),
        ("", "no final answer"),
    ],
)
def test_an_answer_without_the_delimiter_or_a_number_scores_zero(completion: str, reason: str):
    detail = score(completion)
    assert detail["reward"] == 0.0 and detail["reason"].startswith(reason)


@pytest.mark.parametrize(
    "completion",
    [
        "9" * 100_000,
        ";" * 100_000,
        "1+1=2;" * 100_000,
        "#### " + "9" * 5000,
        "15*4-5=" + "9" * 5000 + ";#### 55",
        "1+" * 50_000 + "1",
        "ünïcödé ∑ 😀 #### 53",
        "\x00#### 53",
        "(" * 10_000 + "#### 53",
    ],
)
def test_malformed_and_huge_completions_score_in_bounded_time(completion: str):
    started = time.perf_counter()
    detail = score(completion)
    assert time.perf_counter() - started < 1.0
    assert detail["reward"] in (0.0, 1.0)
    assert detail["steps_written"] <= 64


def test_text_beyond_max_chars_is_not_read():
    padded = "x" * 200 + ";" + SOLUTION
    (result,) = build_verifier("chain_arithmetic", {"max_chars": 100})([padded], [SAMPLE])
    assert result.reward == 0.0 and result.detail["reason"].startswith("no final answer")


def test_a_sample_without_a_solution_checks_the_final_answer_only():
    detail = score(SOLUTION, Sample("c", "(9+6)*4-5=", "55"))
    assert detail["reward"] == 1.0
    assert detail["first_wrong_step"] is None and detail["steps_expected"] is None
    assert "only the final answer is checked" in detail["steps_note"]


@pytest.mark.parametrize("answer", [None, "fifty-three", "5.3"])
def test_a_sample_without_an_integer_answer_scores_zero_with_an_error(answer: str | None):
    detail = score(SOLUTION, Sample("c", "q", answer, {"solution": SOLUTION}))
    assert detail["reward"] == 0.0 and "integer reference answer" in detail["error"]


def test_a_malformed_reference_solution_does_not_break_scoring():
    for meta in ({"solution": 53}, {"solution": "garbage"}, {"solution": ""}):
        detail = score(SOLUTION, Sample("c", "q", "55", meta))
        assert detail["reward"] == 1.0 and detail["steps_expected"] is None


def test_mismatched_lengths_and_an_empty_batch_keep_the_contract():
    verifier = build_verifier("chain_arithmetic")
    assert verifier([], []) == []
    assert all("error" in r.detail for r in verifier([SOLUTION, SOLUTION], [SAMPLE]))


def test_an_unknown_param_is_refused_by_name():
    with pytest.raises(VerifierError, match="no_such_param"):
        build_verifier("chain_arithmetic", {"no_such_param": 1})


def test_step_credit_pays_the_share_of_right_leading_steps_and_never_a_right_answers_one():
    credit = build_verifier("chain_arithmetic", {"step_credit": 0.5})
    wrong_second, wrong_first, right = credit(
        ["15*4-5=61-5=56;#### 56", "16*4-5=64-5=59;#### 59", SOLUTION], [SAMPLE] * 3
    )
    assert wrong_second.reward == pytest.approx(0.5 * 1 / 3) and not wrong_second.correct
    assert wrong_first.reward == 0.0
    assert right.reward == 1.0 and right.correct
    # a right answer reached through a wrong step still scores 1: the reward stays verifiable by the answer
    (lucky,) = credit(["15*4-5=60-5=54;#### 55"], [SAMPLE])
    assert lucky.reward == 1.0 and lucky.detail["first_wrong_step"]["index"] == 2
    # without a reference scratchpad there is nothing to credit
    (bare,) = credit(["15*4-5=61-5=56;#### 56"], [Sample("c", "(9+6)*4-5=", "55")])
    assert bare.reward == 0.0


@pytest.mark.parametrize("value", [-0.1, 1.0, float("nan")])
def test_step_credit_out_of_range_is_refused_by_name(value: float):
    with pytest.raises(VerifierError, match="step_credit"):
        build_verifier("chain_arithmetic", {"step_credit": value})
