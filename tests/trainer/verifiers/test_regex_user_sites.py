"""Every place a user's pattern is compiled runs it in linear time (RE2, trainer/user_regex.py) and refuses
backtracking-only syntax when the config is loaded: verifier params, answer extraction, rubric rules, the
judge's parse pattern, shaping and answer-span patterns. With Python's ``re`` each timed call below took
about 12 s (``(a+)+$`` on 27 ``a``s and a ``b``), doubling with every extra character."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import pytest

from trainer.config import config_from_dict
from trainer.errors import ConfigError, VerifierError
from trainer.rubrics.config import CriterionSpec, JudgeSpec
from trainer.rubrics.judge import parse_judge_score
from trainer.rubrics.rules import build_rule
from trainer.samples import Sample
from trainer.verifiers import build_verifier, build_verifiers, score_batch

EVIL = r"(a+)+$"
AUDIT_TEXT = "a" * 27 + "b"
LOOKAHEAD = "lookahead (?=...) is not supported: patterns run in linear time (RE2 syntax); rewrite without it"


def quickly(call: Callable[[], Any], limit_s: float = 1.0) -> Any:
    started = time.perf_counter()
    value = call()
    assert time.perf_counter() - started < limit_s
    return value


def test_training_scores_the_audit_pattern_at_once() -> None:
    verifiers = build_verifiers([_Spec("regex_format", {"pattern": EVIL}, "format")])
    batch = quickly(lambda: score_batch(verifiers, [1.0], [AUDIT_TEXT, "a" * 64], [Sample("s", "q")] * 2))
    assert batch.per_verifier["format"] == [0.0, 1.0]


def test_a_lookahead_in_regex_format_fails_when_the_config_is_loaded() -> None:
    with pytest.raises(VerifierError, match=r"invalid params: .*pattern '\(\?=a\)b': " + _escaped(LOOKAHEAD)):
        build_verifier("regex_format", {"pattern": "(?=a)b"})


def test_answer_extraction_runs_the_audit_pattern_at_once() -> None:
    verifier = build_verifier("exact", {"extract": "regex", "pattern": EVIL})
    (result,) = quickly(lambda: verifier([AUDIT_TEXT], [Sample("s", "q", "a")]))
    assert result.detail["extracted"] is None and not result.correct


def test_a_backreference_in_answer_extraction_is_refused() -> None:
    with pytest.raises(VerifierError, match=r"backreference \\1 is not supported"):
        build_verifier("exact", {"extract": "regex", "pattern": r"(\d)\1"})


def test_the_answer_tag_stays_linear_on_a_completion_of_unclosed_tags() -> None:
    verifier = build_verifier("exact", {"extract": "answer_tag"})
    (result,) = quickly(lambda: verifier(["<answer> x " * 20_000], [Sample("s", "q", "x")]))
    assert result.detail["extracted"] is None


def test_a_rubric_regex_rule_runs_the_audit_pattern_at_once_and_refuses_lookbehind() -> None:
    rule = build_rule("regex", {"pattern": EVIL, "mode": "fullmatch"})
    assert quickly(lambda: rule(AUDIT_TEXT, Sample("s", "q"))).fraction == 0.0
    with pytest.raises(ConfigError, match=r"lookbehind \(\?<=\.\.\.\) is not supported"):
        build_rule("regex", {"pattern": r"(?<=\$)\d+"})


def test_the_tags_format_rule_stays_linear() -> None:
    rule = build_rule("format", {"kind": "tags", "tags": ["reasoning", "answer"]})
    assert quickly(lambda: rule("<reasoning>" * 20_000, Sample("s", "q"))).fraction == 0.0
    assert rule("<reasoning>r</reasoning> <answer>a</answer>", Sample("s", "q")).fraction == 1.0


def test_the_judge_parse_pattern_is_refused_with_lookahead_and_runs_in_linear_time() -> None:
    with pytest.raises(ValueError, match=r"judge\.parse_pattern '.*': " + _escaped(LOOKAHEAD)):
        JudgeSpec(parse_pattern=r"(?=Score)Score: (\d)")
    spec, criterion = JudgeSpec(parse_pattern=r"(a+)+$"), CriterionSpec(name="c", scorer="judge")
    verdict = quickly(lambda: parse_judge_score(AUDIT_TEXT, spec, criterion))
    assert verdict.detail["reason"] == "the parse pattern did not match"


def test_shaping_and_answer_span_patterns_are_checked_with_the_same_engine() -> None:
    rarity = {"name": "rarity", "params": {"cue": "regex", "cue_pattern": "(?=x)"}}
    located = r"shaping\.advantage_shaping\.0\.params: .*cue_pattern '.*': "
    with pytest.raises(ConfigError, match=located + _escaped(LOOKAHEAD)):
        _config(shaping={"advantage_shaping": [rarity]})
    answer_span = {"name": "answer_span", "params": {"pattern": r"\d+(?!\d)"}}
    located = r"algorithm\.loss_masks\.0\.params: .*answer_span pattern '.*': negative lookahead"
    with pytest.raises(ConfigError, match=located):
        _config(algorithm={"loss_masks": [answer_span]})


class _Spec:
    def __init__(self, name: str, params: dict[str, Any], key: str) -> None:
        self.name, self.params, self.key = name, params, key


def _config(**sections: Any) -> Any:
    return config_from_dict({"rollout": {"max_completion_length": 16}, **sections})


def _escaped(text: str) -> str:
    import re

    return re.escape(text)
