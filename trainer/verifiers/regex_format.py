"""``regex_format``: reward 1 when the completion has the required shape, checked with a regular expression.

The "format reward" of DeepSeek-R1-style recipes (shared/seeds 004:L9, 004:L391, 004:L291: "format reward
alone: +13.8 on MATH-500 for Qwen2.5-Math-7B"): TRL's and open-r1's ``format_reward`` use
``re.match(r"^<think>.*?</think>\\s*<answer>.*?</answer>$", text, re.DOTALL)``. Differences: the pattern and
the matching rule (``fullmatch`` of the stripped completion by default, or ``search`` anywhere) are
parameters, the regex is compiled once and a bad one fails when the config is loaded. It ignores the
reference answer, so it also works on label-free data.

The pattern runs in the training process and in the web test bench, so it is compiled by RE2
(trainer/user_regex.py): matching is linear in the completion's length, ``(a+)+$`` included, and
backtracking-only constructs (lookarounds, backreferences) are refused when the config is loaded.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar, Literal

from pydantic import Field, model_validator

from trainer.errors import VerifierError
from trainer.samples import Sample
from trainer.user_regex import PatternError, UserPattern, compile_user_pattern
from trainer.verifiers.base import VERIFIERS, VerifierParams, VerifierResult, score_each

THINK_ANSWER = r"<think>.*?</think>\s*<answer>.*?</answer>"


class RegexFormatParams(VerifierParams):
    pattern: str = Field(
        THINK_ANSWER,
        description="Regular expression the completion must match (default: <think>…</think> <answer>…</answer>); "
        "RE2 syntax, matched in linear time: no lookarounds or backreferences.",
    )
    match: Literal["fullmatch", "search"] = Field(
        "fullmatch",
        description="fullmatch: the whole (stripped) completion must match; search: a match anywhere.",
    )
    dotall: bool = Field(True, description="'.' also matches newlines (like re.DOTALL).")
    ignore_case: bool = Field(False, description="Case-insensitive matching (like re.IGNORECASE).")
    strip: bool = Field(
        True, description="Strip leading/trailing whitespace from the completion before matching."
    )

    @model_validator(mode="after")
    def _check_pattern(self) -> RegexFormatParams:
        try:
            compile_pattern(self)
        except VerifierError as err:
            raise ValueError(str(err)) from None
        return self


def compile_pattern(params: RegexFormatParams) -> UserPattern:
    try:
        return compile_user_pattern(params.pattern, dotall=params.dotall, ignore_case=params.ignore_case)
    except PatternError as err:
        raise VerifierError(str(err)) from None


@VERIFIERS.register("regex_format")
class RegexFormatVerifier:
    """Reward 1 (and correct) when the completion matches ``pattern``, else 0.

    >>> v = RegexFormatVerifier(RegexFormatParams())
    >>> [r.reward for r in v(["<think>hm</think>\\n<answer>4</answer>", "4"], [Sample("a", "2+2?")] * 2)]
    [1.0, 0.0]
    """

    name: ClassVar[str] = "regex_format"
    Params: ClassVar[type[VerifierParams]] = RegexFormatParams

    def __init__(self, params: RegexFormatParams) -> None:
        self.params = params
        self._regex = compile_pattern(params)

    def __call__(self, completions: Sequence[str], samples: Sequence[Sample]) -> list[VerifierResult]:
        return score_each(completions, samples, self._score_one)

    def _score_one(self, completion: str, sample: Sample) -> VerifierResult:
        if not isinstance(completion, str):
            raise TypeError(f"completion is {type(completion).__name__}, not text")
        text = completion.strip() if self.params.strip else completion
        found = self._regex.fullmatch(text) if self.params.match == "fullmatch" else self._regex.search(text)
        reason = "matches the format" if found else f"does not {self.params.match} the format pattern"
        return VerifierResult(1.0 if found else 0.0, found is not None, {"reason": reason})
