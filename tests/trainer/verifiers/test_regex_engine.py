"""The linear-time engine for user patterns (trainer/user_regex.py): RE2 semantics, limits and errors."""

from __future__ import annotations

import pickle
import re
import time

import pytest

from trainer.user_regex import (
    MAX_PATTERN_CHARS,
    PatternError,
    compile_user_pattern,
)
from trainer.verifiers.regex_format import THINK_ANSWER

AUDIT_TEXT = "a" * 27 + "b"  # Python's re takes ~12 s on (a+)+$ here, and twice as long per extra 'a'


def test_the_audit_pattern_answers_at_once_even_on_a_long_input() -> None:
    pattern = compile_user_pattern(r"(a+)+$")
    started = time.perf_counter()
    assert pattern.fullmatch(AUDIT_TEXT) is None
    assert pattern.search("a" * 100_000 + "b") is None
    assert time.perf_counter() - started < 0.5


def test_the_default_think_answer_pattern_keeps_its_lazy_dotall_meaning() -> None:
    pattern = compile_user_pattern(THINK_ANSWER, dotall=True)
    assert pattern.fullmatch("<think>a\nb</think>\n<answer>4</answer>") is not None
    match = pattern.search("<think>x</think><answer>1</answer> <answer>2</answer>")
    assert match is not None and match.group(0) == "<think>x</think><answer>1</answer>"


def test_a_lookahead_is_refused_with_how_to_rewrite_it() -> None:
    with pytest.raises(PatternError) as err:
        compile_user_pattern(r"answer(?=:)")
    assert str(err.value) == (
        "pattern 'answer(?=:)': lookahead (?=...) is not supported: patterns run in linear time (RE2 syntax); "
        "rewrite without it"
    )


@pytest.mark.parametrize(
    ("pattern", "construct"),
    [
        (r"a(?!b)", "negative lookahead (?!...)"),
        (r"(?<=\$)\d+", "lookbehind (?<=...)"),
        (r"(?<!-)\d+", "negative lookbehind (?<!...)"),
        (r"(\w)\1", r"backreference \1"),
        (r"(?P<x>a)(?P=x)", "named backreference (?P=name)"),
        (r"(?>a+)b", "atomic group (?>...)"),
        (r"a++b", "possessive quantifier ++"),
        (r"(a)?(?(1)b|c)", "conditional group (?(id)yes|no)"),
        (r"(?x) a b", "verbose flag (?x)"),
    ],
)
def test_each_backtracking_only_construct_is_named_in_the_error(pattern: str, construct: str) -> None:
    with pytest.raises(
        PatternError, match=re.escape(construct) + r" is not supported: patterns run in linear time"
    ):
        compile_user_pattern(pattern, what="params.pattern")


def test_the_error_names_the_setting_it_came_from() -> None:
    with pytest.raises(PatternError, match=r"^judge\.parse_pattern is not a valid regular expression"):
        compile_user_pattern("(", what="judge.parse_pattern")


def test_a_pattern_longer_than_the_limit_is_refused() -> None:
    with pytest.raises(PatternError, match=f"the limit is {MAX_PATTERN_CHARS}: shorten it"):
        compile_user_pattern("a" * (MAX_PATTERN_CHARS + 1))


def test_a_pattern_whose_program_is_too_large_is_refused() -> None:
    with pytest.raises(PatternError, match="too large: it compiles to 11004 instructions"):
        compile_user_pattern(r"(.*){1,1000}z")


def test_a_repetition_count_above_1000_is_refused_with_the_alternative() -> None:
    with pytest.raises(PatternError, match=r"\{2000\} is larger than 1000.*use \+ or \* instead"):
        compile_user_pattern(r"a{2000}")


def test_ignore_case_and_dotall_map_to_the_engine() -> None:
    assert compile_user_pattern("abc", ignore_case=True).fullmatch("ABC") is not None
    assert compile_user_pattern("abc").fullmatch("ABC") is None
    assert compile_user_pattern("a.b", dotall=True).fullmatch("a\nb") is not None
    assert compile_user_pattern("a.b").fullmatch("a\nb") is None
    assert compile_user_pattern("^b$", multiline=True).search("a\nb\nc") is not None


def test_inline_flags_work_as_in_python() -> None:
    assert compile_user_pattern(r"(?is)a.B").fullmatch("a\nb") is not None
    assert compile_user_pattern(r"x(?i:Y)z").fullmatch("xyz") is not None


def test_backslash_capital_z_means_the_end_of_the_text_as_in_python() -> None:
    pattern = compile_user_pattern(r"done\Z")
    assert pattern.search("all done") is not None
    assert pattern.search("done and more") is None


def test_python_unicode_escapes_are_understood() -> None:
    assert compile_user_pattern(r"caf\u00e9 \U0001F600").fullmatch("café 😀") is not None


def test_the_last_match_and_named_groups_behave_like_re() -> None:
    text = "x=1, x=22, x=333"
    ours = compile_user_pattern(r"x=(?P<answer>\d+)")
    theirs = re.compile(r"x=(?P<answer>\d+)")
    last = ours.last_match(text)
    assert (
        last is not None and last.group("answer") == list(theirs.finditer(text))[-1].group("answer") == "333"
    )
    assert ours.groupindex == {"answer": 1} and ours.groups == 1
    assert last.span("answer") == (13, 16)


def test_a_compiled_pattern_survives_pickling_for_a_worker_process() -> None:
    pattern = pickle.loads(pickle.dumps(compile_user_pattern(r"(\d+)$", ignore_case=True)))
    match = pattern.search("total 42")
    assert match is not None and match.group(1) == "42"
