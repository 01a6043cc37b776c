"""Answer extraction modes shared by the verifiers (trainer/verifiers/extract.py)."""

import pytest
from reasoning_gym.utils import extract_answer as rg_extract_answer

from trainer.errors import VerifierError
from trainer.verifiers.extract import Extractor, extract_answer


def test_full_mode_strips_the_completion() -> None:
    assert extract_answer("  42 \n", "full").value == "42"


def test_first_line_mode_skips_leading_blank_lines() -> None:
    assert extract_answer("\n\n  Paris \nbecause it is the capital", "first_line").value == "Paris"


def test_every_mode_reports_an_empty_completion() -> None:
    for mode in ("full", "first_line", "boxed", "last_number", "answer_tag"):
        found = extract_answer("   \n ", mode)
        assert found.value is None
        assert found.reason == "empty completion"


def test_boxed_mode_takes_the_last_box_with_nested_braces() -> None:
    text = r"first \boxed{1} then \boxed{\frac{1}{\sqrt{2}}} done"
    assert extract_answer(text, "boxed").value == r"\frac{1}{\sqrt{2}}"


def test_boxed_mode_keeps_escaped_braces_of_a_set() -> None:
    assert extract_answer(r"$\boxed{\{1, 2\}}$", "boxed").value == r"\{1, 2\}"


def test_boxed_mode_reads_a_box_without_braces() -> None:
    assert extract_answer(r"so $\boxed 5$", "boxed").value == "5"


def test_boxed_mode_refuses_a_truncated_last_box() -> None:
    found = extract_answer(r"\boxed{1} and finally \boxed{\frac{3}{4", "boxed")
    assert found.value is None
    assert "never closed" in found.reason


def test_boxed_mode_reports_a_missing_box() -> None:
    assert extract_answer("the answer is 3", "boxed").value is None


def test_last_number_removes_thousands_separators() -> None:
    assert extract_answer("We sold 1,234,567 units.", "last_number").value == "1234567"


def test_last_number_keeps_a_negative_sign() -> None:
    assert extract_answer("the change is -7.5 degrees", "last_number").value == "-7.5"


def test_last_number_reads_a_unicode_minus() -> None:
    assert extract_answer("température: −12", "last_number").value == "-12"


def test_last_number_does_not_take_a_range_dash_as_a_sign() -> None:
    assert extract_answer("pages 3-5", "last_number").value == "5"


def test_last_number_reads_fractions_plain_and_latex() -> None:
    assert extract_answer("it is 3 / 4", "last_number").value == "3/4"
    assert extract_answer(r"it is $\frac{-3}{4}$", "last_number").value == "-3/4"


def test_last_number_reads_scientific_notation_and_percent() -> None:
    assert extract_answer("about 6.02e23 atoms", "last_number").value == "6.02e23"
    assert extract_answer("a rise of 50%.", "last_number").value == "50%"


def test_last_number_does_not_glue_an_invalid_group() -> None:
    assert extract_answer("1,2345", "last_number").value == "2345"


def test_last_number_keeps_a_huge_integer_exact() -> None:
    digits = "9" * 60
    assert extract_answer(f"total {digits}", "last_number").value == digits


def test_last_number_reports_no_number() -> None:
    assert extract_answer("no digits here", "last_number").value is None


def test_regex_mode_takes_first_group_of_last_match() -> None:
    found = extract_answer("answer: 1. Wait, answer: 2", "regex", pattern=r"answer:\s*(\d+)")
    assert found.value == "2"


def test_regex_mode_prefers_a_group_named_answer() -> None:
    found = extract_answer("x=3; y=4", "regex", pattern=r"(\w)=(?P<answer>\d)")
    assert found.value == "4"


def test_regex_mode_without_groups_takes_the_whole_match() -> None:
    assert extract_answer("codes AB12 and CD34", "regex", pattern=r"[A-Z]{2}\d{2}").value == "CD34"


def test_regex_mode_reports_no_match() -> None:
    assert extract_answer("nothing", "regex", pattern=r"answer: (\d+)").reason == "pattern did not match"


def test_malformed_regex_raises_at_construction() -> None:
    with pytest.raises(VerifierError, match="not a valid regular expression"):
        Extractor("regex", pattern="(unclosed")


def test_regex_mode_without_pattern_raises() -> None:
    with pytest.raises(VerifierError, match="needs a pattern"):
        Extractor("regex")


def test_pattern_with_another_mode_raises() -> None:
    with pytest.raises(VerifierError, match="only used with extract='regex'"):
        Extractor("boxed", pattern=r"\d+")


def test_answer_tag_mode_matches_reasoning_gym_extract_answer() -> None:
    texts = [
        "<think>hmm</think><answer> 42 </answer>",
        "<answer>1</answer> and <answer>\nmulti\nline\n</answer>",
        "no tag at all",
        "<answer>unclosed",
    ]
    for text in texts:
        assert extract_answer(text, "answer_tag").value == (rg_extract_answer(text) or None)


def test_answer_tag_mode_uses_the_tag_param() -> None:
    assert extract_answer("<final>7</final>", "answer_tag", tag="final").value == "7"


def test_answer_tag_mode_refuses_an_invalid_tag_name() -> None:
    with pytest.raises(VerifierError, match="not a valid tag name"):
        Extractor("answer_tag", tag="a>b")
