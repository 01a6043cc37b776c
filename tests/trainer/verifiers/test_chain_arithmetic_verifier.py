"""The chain_arithmetic verifier: final-answer reward, first wrong step in the detail, never raises."""

import json
import time

import pytest

from trainer.data.chain_arithmetic import chain_arithmetic_levels, chain_arithmetic_samples
from trainer.errors import VerifierError
from trainer.samples import Sample
from trainer.verifiers import VERIFIERS, build_verifier

SOLUTION = "12+7=19;19*3=57;57-4=53;#### 53"
SAMPLE = Sample("c", "(12+7)*3-4=", "53", {"solution": SOLUTION})


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


def test_a_wrong_middle_step_is_named_with_its_expected_and_written_result():
    detail = score("12+7=19;19*3=58;58-4=54;#### 54")
    assert detail["reward"] == 0.0 and detail["extracted"] == "54"
    assert detail["first_wrong_step"] == {
        "index": 1,
        "expected": "57",
        "expected_step": "19*3=57",
        "written": "58",
        "written_step": "19*3=58",
        "kind": "arithmetic",
    }
    assert detail["steps_right"] == 1


def test_a_wrong_step_is_reported_even_when_the_final_answer_is_right():
    detail = score("12+7=19;19*3=58;57-4=53;#### 53")
    assert detail["reward"] == 1.0
    assert detail["first_wrong_step"]["index"] == 1


def test_a_mis_copied_operand_is_an_operand_error():
    detail = score("12+7=19;19*4=76;76-4=72;#### 72")
    assert detail["first_wrong_step"]["kind"] == "operands"
    assert (detail["first_wrong_step"]["expected"], detail["first_wrong_step"]["written"]) == ("57", "76")


def test_operands_of_sums_and_products_may_be_swapped():
    detail = score("7+12=19;3*19=57;57-4=53;#### 53")
    assert detail["reward"] == 1.0 and detail["first_wrong_step"] is None


def test_swapped_operands_of_a_difference_are_wrong():
    assert score("12+7=19;19*3=57;4-57=-53;#### 53")["first_wrong_step"]["index"] == 2


def test_missing_extra_and_unreadable_steps_are_named():
    missing = score("12+7=19;#### 53")["first_wrong_step"]
    assert (missing["index"], missing["kind"], missing["written"]) == (1, "missing", None)
    extra = score(SOLUTION.replace("####", "53+0=53;####"))["first_wrong_step"]
    assert (extra["index"], extra["kind"]) == (3, "extra")
    unreadable = score("12+7=19;nineteen times three;57-4=53;#### 53")["first_wrong_step"]
    assert (unreadable["index"], unreadable["kind"], unreadable["written_step"]) == (
        1,
        "unreadable",
        "nineteen times three",
    )


def test_newlines_spaces_and_x_for_times_are_read():
    detail = score("12 + 7 = 19\n19 x 3 = 57\n57 - 4 = 53\n#### 53")
    assert detail["reward"] == 1.0 and detail["first_wrong_step"] is None


def test_only_the_first_marker_counts():
    assert score("12+7=19;19*3=57;57-4=53;#### 52 #### 53")["reward"] == 0.0
    assert score(SOLUTION + "<eos>garbage #### 7")["reward"] == 1.0


@pytest.mark.parametrize(
    ("completion", "reason"),
    [
        ("12+7=19;19*3=57;57-4=53;53", "no final answer"),
        ("12+7=19;19*3=57;57-4=53;#### fifty-three", "no integer after '####'"),
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
        "12+7=" + "9" * 5000 + ";#### 53",
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
    detail = score(SOLUTION, Sample("c", "(12+7)*3-4=", "53"))
    assert detail["reward"] == 1.0
    assert detail["first_wrong_step"] is None and detail["steps_expected"] is None
    assert "only the final answer is checked" in detail["steps_note"]


@pytest.mark.parametrize("answer", [None, "fifty-three", "5.3"])
def test_a_sample_without_an_integer_answer_scores_zero_with_an_error(answer: str | None):
    detail = score(SOLUTION, Sample("c", "q", answer, {"solution": SOLUTION}))
    assert detail["reward"] == 0.0 and "integer reference answer" in detail["error"]


def test_a_malformed_reference_solution_does_not_break_scoring():
    for meta in ({"solution": 53}, {"solution": "garbage"}, {"solution": ""}):
        detail = score(SOLUTION, Sample("c", "q", "53", meta))
        assert detail["reward"] == 1.0 and detail["steps_expected"] is None


def test_mismatched_lengths_and_an_empty_batch_keep_the_contract():
    verifier = build_verifier("chain_arithmetic")
    assert verifier([], []) == []
    assert all("error" in r.detail for r in verifier([SOLUTION, SOLUTION], [SAMPLE]))


def test_an_unknown_param_is_refused_by_name():
    with pytest.raises(VerifierError, match="no_such_param"):
        build_verifier("chain_arithmetic", {"no_such_param": 1})
