"""The ``rubric`` section of ExperimentConfig: criteria, how each is scored, and how scores are merged.

A rubric reward follows the rubric-based RLVR setting of RLVR^2 (METHODS.md §3b, ``001:L7``): several
criteria score each rollout, and an aggregator turns the criterion scores of a group into one scalar per
rollout. Human-only criteria are kept in the config (the web app's annotation uses the same rubric) but
are never scored in training. Importable without torch.
"""

from __future__ import annotations

import string
from typing import Any, Literal

from pydantic import Field, model_validator

from trainer.bounds import MAX_LIST_ITEMS, BoundedModel
from trainer.rubrics.aggregators import AGGREGATORS
from trainer.user_regex import PatternError, check_user_pattern

Scale = Literal["binary", "likert5", "range"]
ScorerKind = Literal["rule", "judge", "human"]

# Placeholders a judge prompt template may use (str.format names).
JUDGE_PLACEHOLDERS = ("prompt", "completion", "answer", "criterion", "description", "min", "max")
DEFAULT_JUDGE_TEMPLATE = (
    "Rate the response on '{criterion}': {description}\n"
    "Question: {prompt}\nResponse: {completion}\n"
    "Give a score from {min} to {max}.\nScore:"
)
DEFAULT_PARSE_PATTERN = r"(-?\d+(?:\.\d+)?)"


class _Section(BoundedModel):
    """A rubric section: unknown keys refused, every value bounded (trainer/bounds.py)."""


class RuleSpec(_Section):
    """A verifiable rule: a rule registry name (trainer/rubrics/rules.py) and its parameters."""

    type: str = Field(
        description="Rule type: 'regex', 'length', 'format', 'json_schema' or 'verifier' (any verifier of "
        "the trainer's registry). Rule criteria are the 'verifiable' criteria of rubric-based RLVR "
        "(RLVR^2)."
    )
    params: dict[str, Any] = Field(default_factory=dict, description="The rule's parameters (see its docs).")


class JudgeSpec(_Section):
    """How an LLM judge scores one criterion: the prompt it reads and how its score is parsed."""

    prompt_template: str = Field(
        DEFAULT_JUDGE_TEMPLATE,
        description="Python format string for the judge's prompt; may use {prompt}, {completion}, {answer}, "
        "{criterion}, {description}, {min}, {max}. A rubric-conditioned judge as in Prometheus, "
        "here a local model run through the rollout engine.",
    )
    parse_pattern: str = Field(
        DEFAULT_PARSE_PATTERN,
        description="Regular expression searched in the judge's output; its first group (or the whole "
        "match) must be a number on the criterion's scale, else the output counts as unparseable (score 0).",
    )

    @model_validator(mode="after")
    def _check_template(self) -> JudgeSpec:
        try:
            names = {f[1] for f in string.Formatter().parse(self.prompt_template) if f[1]}
        except ValueError as err:
            raise ValueError(
                f"judge.prompt_template is not a valid format string ({err}); write {{{{ and }}}} for literal braces"
            ) from None
        unknown = sorted(n for n in names if n not in JUDGE_PLACEHOLDERS)
        if unknown:
            raise ValueError(
                f"judge.prompt_template uses unknown placeholder(s) {unknown}; valid: "
                f"{', '.join('{' + p + '}' for p in JUDGE_PLACEHOLDERS)}"
            )
        if "completion" not in names:
            raise ValueError(
                "judge.prompt_template must contain {completion}: the judge has to see the response"
            )
        try:
            check_user_pattern(self.parse_pattern, what="judge.parse_pattern")
        except PatternError as err:
            raise ValueError(str(err)) from None
        return self


class CriterionSpec(_Section):
    """One rubric criterion: what it measures, its scale and weight, and who scores it."""

    name: str = Field(
        min_length=1, max_length=80, description="Unique within the rubric; metrics use rubric/<name>."
    )
    description: str = Field("", description="What the criterion rewards; judges see it as {description}.")
    scale: Scale = Field(
        "binary",
        description="'binary' (0/1), 'likert5' (1-5) or 'range' (min_value..max_value). Scores are "
        "normalised to [0, 1] by the scale for weighted_sum (linear normalised sum).",
    )
    min_value: float = Field(
        0.0, ge=-1e6, le=1e6, description="Lowest score of a 'range' scale (binary: 0, likert5: 1)."
    )
    max_value: float = Field(
        1.0, ge=-1e6, le=1e6, description="Highest score of a 'range' scale (binary: 1, likert5: 5)."
    )
    weight: float = Field(
        1.0, ge=0, le=1000, description="Weight of this criterion when merging (both aggregators)."
    )
    scorer: ScorerKind = Field(
        "rule",
        description="'rule' (verifiable rule), 'judge' (LLM judge) or 'human' (annotation only; "
        "excluded from the training reward).",
    )
    rule: RuleSpec | None = Field(None, description="The rule, when scorer is 'rule'.")
    judge: JudgeSpec | None = Field(
        None, description="The judge prompt and parse pattern, when scorer is 'judge'."
    )

    @property
    def bounds(self) -> tuple[float, float]:
        """(lowest, highest) score of the scale."""
        if self.scale == "binary":
            return 0.0, 1.0
        if self.scale == "likert5":
            return 1.0, 5.0
        return self.min_value, self.max_value

    def normalise(self, score: float) -> float:
        """The score mapped linearly to [0, 1] by the scale (clipped)."""
        low, high = self.bounds
        return min(1.0, max(0.0, (score - low) / (high - low)))

    @model_validator(mode="after")
    def _check_scorer(self) -> CriterionSpec:
        if self.scale == "range" and not self.max_value > self.min_value:
            raise ValueError(
                f"criterion {self.name!r}: max_value ({self.max_value}) must be greater than min_value ({self.min_value})"
            )
        if self.scorer == "rule" and self.rule is None:
            raise ValueError(
                f"criterion {self.name!r} is scored by a rule but has no 'rule': set rule.type and rule.params"
            )
        if self.scorer == "judge" and self.judge is None:
            object.__setattr__(self, "judge", JudgeSpec())  # the default template and pattern
        if self.rule is not None:
            from trainer.errors import RLVRError
            from trainer.rubrics.rules import build_rule

            try:
                build_rule(self.rule.type, self.rule.params)  # bad params fail when the config is built
            except RLVRError as err:
                raise ValueError(f"criterion {self.name!r}: {err}") from None
        return self


class JudgeModelConfig(_Section):
    """The local model that judges 'judge' criteria, run through the hf rollout engine."""

    name_or_path: str | None = Field(
        None,
        max_length=1000,
        description="The judge: a local Hugging Face causal-LM directory or a built-in 'tiny:' model; nothing is "
        "downloaded. A frozen judge model, as in rubric-conditioned judging (Prometheus). Required when a criterion "
        "is scored by 'judge': there is no default (a judge that is the policy itself grades its own answers); "
        "a judge behind an OpenAI-compatible endpoint is a 'judge' reward source under verifiers instead.",
    )
    max_new_tokens: int = Field(8, ge=1, le=512, description="Tokens the judge may write per verdict.")
    temperature: float = Field(
        1.0, gt=0, le=100, description="Judge sampling temperature (with top_k 1: greedy)."
    )
    top_k: int = Field(
        1,
        ge=0,
        le=1_000_000,
        description="Judge top-k; the default 1 makes the judge greedy and deterministic.",
    )
    batch_size: int = Field(64, ge=1, le=4096, description="Judge prompts generated together in one batch.")
    chat_template: Literal["auto", "always", "never"] = Field(
        "auto",
        description="Wrap each judge prompt as a user message in the judge tokenizer's chat template (instruct "
        "judges expect it): 'auto' when the tokenizer has one, 'always' (an error without one), 'never' (plain text).",
    )
    system_prompt: str | None = Field(
        None, description="System message before each judge prompt when the chat template is used."
    )


class RubricConfig(_Section):
    """A rubric as the training reward: criteria, aggregation (RLVR^2) and the judge model."""

    name: str = Field(
        "rubric", max_length=200, description="Rubric name (shown in metrics and rollout details)."
    )
    aggregation: str = Field(
        "weighted_sum",
        description="'weighted_sum': normalise each criterion to [0, 1] by its scale, weighted mean "
        "(the linear baseline); 'rank': RLVR^2, within-group ordinal outcomes per "
        "criterion -> win-rate utility -> weighted mean.",
        json_schema_extra={"enum": list[Any](AGGREGATORS.names())},  # the form's select; validated below
    )
    criteria: list[CriterionSpec] = Field(
        max_length=MAX_LIST_ITEMS, description="The criteria, in rubric order."
    )
    reward_weight: float = Field(
        1.0,
        ge=0,
        le=1000,
        description="Weight of the rubric reward added to the verifiers' total (set "
        "algorithm.reward_weights to [0] to train on the rubric alone).",
    )
    judge_model: JudgeModelConfig = Field(
        default_factory=JudgeModelConfig,
        description="The frozen local model that scores 'judge' criteria (loaded only when one exists).",
    )

    @property
    def trained_criteria(self) -> list[CriterionSpec]:
        """The criteria that score rollouts in training: rule and judge ones (human ones are excluded)."""
        return [c for c in self.criteria if c.scorer != "human"]

    @property
    def uses_judge(self) -> bool:
        return any(c.scorer == "judge" for c in self.criteria)

    @model_validator(mode="after")
    def _check_criteria(self) -> RubricConfig:
        if self.aggregation not in AGGREGATORS:
            raise ValueError(
                f"rubric.aggregation {self.aggregation!r} is unknown; valid: {', '.join(AGGREGATORS.names())}"
            )
        names = [c.name for c in self.criteria]
        duplicates = sorted({n for n in names if names.count(n) > 1})
        if duplicates:
            raise ValueError(f"rubric criteria names must be unique; repeated: {duplicates}")
        trained = self.trained_criteria
        if not trained:
            raise ValueError(
                "the rubric has no rule or judge criterion, so it cannot be a training reward: "
                "score at least one criterion by a rule or an LLM judge (human criteria are annotation only)"
            )
        if sum(c.weight for c in trained) <= 0:
            raise ValueError(
                "the rule and judge criteria all have weight 0: give at least one a positive weight"
            )
        if self.uses_judge and self.judge_model.name_or_path is None:
            judged = [c.name for c in self.criteria if c.scorer == "judge"]
            raise ValueError(
                f"rubric criteria {judged} are scored by a judge but rubric.judge_model.name_or_path is not set: name "
                "a local judge model (a causal-LM folder or a 'tiny:' model; the policy is no longer the default "
                "judge), or score them with a 'judge' reward source (an OpenAI-compatible endpoint) under verifiers"
            )
        return self
