"""The LLM judge: prompt rendering, score parsing, and a real tiny model judging through the hf engine."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from trainer.rubrics.config import CriterionSpec, JudgeModelConfig, JudgeSpec
from trainer.rubrics.judge import UNPARSEABLE, load_judge, parse_judge_score, render_judge_prompt
from trainer.samples import Sample

LIKERT = CriterionSpec(name="clarity", description="Is it clear?", scale="likert5", scorer="judge")
SAMPLE = Sample(id="0", prompt="What is {2+3}?", answer="5")


def test_the_template_is_filled_and_user_braces_stay_literal() -> None:
    spec = JudgeSpec(
        prompt_template="[{criterion}: {description} {min}-{max}] Q={prompt} A={completion} ref={answer}"
    )
    text = render_judge_prompt(spec, LIKERT, "It is {five}", SAMPLE)
    assert text == "[clarity: Is it clear? 1-5] Q=What is {2+3}? A=It is {five} ref=5"


def test_the_first_group_of_the_pattern_is_the_score() -> None:
    verdict = parse_judge_score("Reasoning... Score: 4/5", JudgeSpec(parse_pattern=r"Score: (\d)"), LIKERT)
    assert verdict.score == 4.0 and verdict.detail["output"] == "Reasoning... Score: 4/5"


def test_a_pattern_without_groups_uses_the_whole_match() -> None:
    assert parse_judge_score("3.5 points", JudgeSpec(parse_pattern=r"\d+\.\d+"), LIKERT).score == 3.5


@pytest.mark.parametrize(
    ("output", "reason"),
    [
        ("no idea", "did not match"),
        ("Score: 9", "outside the scale [1, 5]"),
        ("Score: 0", "outside the scale"),
    ],
)
def test_unparseable_or_out_of_scale_output_is_nan_with_the_reason(output: str, reason: str) -> None:
    verdict = parse_judge_score(output, JudgeSpec(parse_pattern=r"Score: (\d)"), LIKERT)
    assert math.isnan(verdict.score)
    assert verdict.detail["error"] == UNPARSEABLE and reason in verdict.detail["reason"]


def test_a_group_that_is_not_a_number_is_unparseable() -> None:
    verdict = parse_judge_score("Score: high", JudgeSpec(parse_pattern=r"Score: (\w+)"), LIKERT)
    assert math.isnan(verdict.score) and "'high' is not a number" in verdict.detail["reason"]


def test_a_template_with_unknown_placeholders_or_no_completion_is_refused() -> None:
    with pytest.raises(ValueError, match=r"unknown placeholder\(s\) \['response'\]"):
        JudgeSpec(prompt_template="{response}")
    with pytest.raises(ValueError, match=r"must contain \{completion\}"):
        JudgeSpec(prompt_template="{prompt}")
    with pytest.raises(ValueError, match="not a valid regular expression"):
        JudgeSpec(parse_pattern="(")


def test_a_missing_judge_model_directory_says_what_to_set(tmp_path: Path) -> None:
    import torch

    from trainer.errors import ConfigError

    with pytest.raises(ConfigError, match=r"rubric\.judge_model\.name_or_path"):
        load_judge(JudgeModelConfig(name_or_path=str(tmp_path / "none")), "float32", torch.device("cpu"))


def test_the_tiny_addition_model_judges_through_the_rollout_engine(warm_model_dir: Path) -> None:
    import torch

    judge = load_judge(
        JudgeModelConfig(name_or_path=str(warm_model_dir), max_new_tokens=4), "float32", torch.device("cpu")
    )
    summing = CriterionSpec(
        name="sum",
        scale="range",
        min_value=0,
        max_value=999,
        scorer="judge",
        judge=JudgeSpec(prompt_template="{completion}+1=", parse_pattern=r"(\d+)"),
    )
    never = CriterionSpec(
        name="never",
        scale="likert5",
        scorer="judge",
        judge=JudgeSpec(prompt_template="{completion}+1=", parse_pattern=r"Score: (\d)"),
    )
    completions, samples = ["12", "40", "7"], [SAMPLE] * 3
    verdicts = judge.judge([summing, never], completions, samples)
    again = judge.judge([summing, never], completions, samples)
    for v in verdicts["sum"]:  # the tiny model writes digits: each output parses to its leading number
        digits = "".join(ch for ch in v.detail["output"] if ch.isdigit()) or "x"
        assert v.detail["output"].startswith(str(int(v.score))) and digits.startswith(str(int(v.score)))
    assert [v.score for v in verdicts["sum"]] == [v.score for v in again["sum"]]  # greedy: deterministic
    assert all(math.isnan(v.score) and v.detail["error"] == UNPARSEABLE for v in verdicts["never"])


_CHAT = "{% for m in messages %}<{{ m['role'] }}>{{ m['content'] }}</{{ m['role'] }}>{% endfor %}<assistant>"


def test_judge_prompts_use_the_chat_template_when_the_tokenizer_has_one(warm_model_dir: Path) -> None:
    import torch

    from trainer.errors import ConfigError

    criterion = CriterionSpec(
        name="c",
        scale="binary",
        scorer="judge",
        judge=JudgeSpec(prompt_template="Rate {completion}", parse_pattern=r"(\d)"),
    )
    plain = load_judge(JudgeModelConfig(name_or_path=str(warm_model_dir)), "float32", torch.device("cpu"))
    assert plain.prompts([criterion], ["x<b>"], [SAMPLE]) == [
        "Rate x<b>"
    ]  # the tiny tokenizer has no template
    with pytest.raises(ConfigError, match=r"chat_template is 'always' .* has no chat template"):
        load_judge(
            JudgeModelConfig(name_or_path=str(warm_model_dir), chat_template="always"),
            "float32",
            torch.device("cpu"),
        )

    plain.tokenizer.chat_template = _CHAT  # as an instruct judge's tokenizer carries one
    settings = JudgeModelConfig(name_or_path=str(warm_model_dir), system_prompt="Be strict.")
    from trainer.rubrics.judge import LLMJudge

    chat = LLMJudge(plain.engine, settings)
    assert chat.prompts([criterion], ["x<b>"], [SAMPLE]) == [
        "<system>Be strict.</system><user>Rate x<b></user><assistant>"
    ]
    never = LLMJudge(plain.engine, settings.model_copy(update={"chat_template": "never"}))
    assert never.prompts([criterion], ["x<b>"], [SAMPLE]) == ["Rate x<b>"]
