"""Rule scorers for rubric criteria: checks a program can verify, each returning a pass fraction in [0, 1].

A rule criterion is a "verifiable" rubric item in the sense of rubric-based RLVR (RLVR^2, ``001:L7``):
its score comes from code, not a judge. Each rule validates its own parameters with a pydantic model
(so a bad rule fails when the config is built, with what to fix) and maps (completion, sample) to a
``RuleOutcome``; the criterion's scale turns the fraction into a score (``low + fraction * (high - low)``).
Rules never raise while scoring: the caller turns an exception into score 0 with ``detail['error']``.
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar, Literal, Protocol

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from trainer.errors import ConfigError
from trainer.registry import Registry
from trainer.samples import Sample
from trainer.user_regex import PatternError, UserPattern, check_user_pattern, compile_user_pattern


@dataclass
class RuleOutcome:
    """``fraction``: 1.0 = fully satisfied, 0.0 = not at all; ``detail``: why (JSON-serialisable)."""

    fraction: float
    detail: dict[str, Any] = field(default_factory=dict)


class RuleParams(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Rule(Protocol):
    Params: ClassVar[type[RuleParams]]

    def __call__(self, completion: str, sample: Sample) -> RuleOutcome: ...


RULES: Registry[type[Rule]] = Registry("rubric rule")


def build_rule(type_: str, params: dict[str, Any] | None = None) -> Rule:
    """A registered rule with validated parameters; ConfigError names the bad parameter and the fix."""
    cls = RULES.get(type_)
    try:
        validated = cls.Params.model_validate(params or {})
    except ValidationError as err:
        problems = []
        for e in err.errors():
            where = ".".join(str(p) for p in e["loc"])
            if e["type"] == "extra_forbidden":
                valid = ", ".join(f.alias or name for name, f in cls.Params.model_fields.items())
                problems.append(f"{where}: unknown parameter; valid: {valid}")
            else:
                message = e["msg"].removeprefix("Value error, ")
                problems.append(f"{where}: {message}" if where else message)
        raise ConfigError(f"rule {type_!r} has invalid params: {'; '.join(problems)}") from None
    return cls(validated)  # type: ignore[call-arg]


def _passed(ok: bool, **detail: Any) -> RuleOutcome:
    return RuleOutcome(1.0 if ok else 0.0, {"passed": ok, **detail})


# --- regex ------------------------------------------------------------------------------------------


class RegexParams(RuleParams):
    pattern: str = Field(
        description="Regular expression (RE2 syntax: linear-time, no lookarounds or backreferences)."
    )
    mode: Literal["search", "fullmatch"] = Field(
        "search", description="Match anywhere, or the whole completion."
    )
    ignore_case: bool = False
    dotall: bool = Field(False, description="'.' also matches newlines.")
    must_match: bool = Field(True, description="False: the criterion passes when the pattern does NOT match.")

    @model_validator(mode="after")
    def _compile(self) -> RegexParams:
        try:
            check_user_pattern(self.pattern, ignore_case=self.ignore_case, dotall=self.dotall)
        except PatternError as err:
            raise ValueError(str(err)) from None
        return self


@RULES.register("regex")
class RegexRule:
    """Passes when the completion matches (or, with must_match false, avoids) a regular expression.

    The rubric counterpart of the ``regex_format`` verifier; a binary check as in verifiable rubric items
    (RLVR^2, 001:L7). Differs from the paper: the paper does not define rule types; this is ours.
    """

    Params: ClassVar[type[RuleParams]] = RegexParams

    def __init__(self, params: RegexParams) -> None:
        self.regex = compile_user_pattern(
            params.pattern, ignore_case=params.ignore_case, dotall=params.dotall
        )
        self.params = params

    def __call__(self, completion: str, sample: Sample) -> RuleOutcome:
        match = (
            self.regex.search(completion)
            if self.params.mode == "search"
            else self.regex.fullmatch(completion)
        )
        matched = match is not None
        return _passed(matched == self.params.must_match, matched=match.group(0)[:200] if match else None)


# --- length -----------------------------------------------------------------------------------------


class LengthParams(RuleParams):
    unit: Literal["chars", "words", "lines"] = Field("words", description="What is counted.")
    min: int | None = Field(
        None, ge=0, le=10_000_000, description="Lowest allowed count (inclusive); null: no lower bound."
    )
    max: int | None = Field(
        None, ge=0, le=10_000_000, description="Highest allowed count (inclusive); null: no upper bound."
    )

    @model_validator(mode="after")
    def _bounds(self) -> LengthParams:
        if self.min is None and self.max is None:
            raise ValueError("give min, max or both")
        if self.min is not None and self.max is not None and self.min > self.max:
            raise ValueError(f"min ({self.min}) is greater than max ({self.max})")
        return self


@RULES.register("length")
class LengthRule:
    """Passes when the completion's length (characters, words or lines) lies within [min, max].

    A length-bound rubric item; length is one of the "auxiliary attributes" RLVR^2 (001:L7) controls
    for, here used directly as a criterion instead (our choice; the paper adjusts for it as a covariate).
    """

    Params: ClassVar[type[RuleParams]] = LengthParams

    def __init__(self, params: LengthParams) -> None:
        self.params = params

    def __call__(self, completion: str, sample: Sample) -> RuleOutcome:
        p = self.params
        if p.unit == "chars":
            count = len(completion)
        elif p.unit == "words":
            count = len(completion.split())
        else:
            count = len(completion.splitlines())
        ok = (p.min is None or count >= p.min) and (p.max is None or count <= p.max)
        return _passed(ok, count=count, unit=p.unit, min=p.min, max=p.max)


# --- format -----------------------------------------------------------------------------------------


class FormatParams(RuleParams):
    kind: Literal["boxed", "think_answer", "tags", "json", "code_block"] = Field(
        description="'boxed': contains \\boxed{...}; 'think_answer': <think>...</think> then a non-empty "
        "answer; 'tags': every tag in 'tags' appears as <tag>...</tag>, in order; 'json': the completion "
        "(or its ```json block) parses as JSON; 'code_block': contains a fenced ``` block."
    )
    tags: list[str] = Field(
        default_factory=list, description="Tag names for kind 'tags', e.g. ['reasoning', 'answer']."
    )

    @model_validator(mode="after")
    def _tags(self) -> FormatParams:
        if self.kind == "tags" and not self.tags:
            raise ValueError("kind 'tags' needs a non-empty 'tags' list, e.g. ['reasoning', 'answer']")
        bad = [t for t in self.tags if not re.fullmatch(r"[A-Za-z_][\w.-]*", t)]
        if bad:
            raise ValueError(f"tags must be plain tag names (letters, digits, _ . -), got {bad}")
        if self.kind == "tags":
            try:
                check_user_pattern(_tags_pattern(self.tags), dotall=True, what="tags")
            except PatternError as err:
                raise ValueError(str(err)) from None
        return self


def _tags_pattern(tags: list[str]) -> str:
    """Every tag as <tag>...</tag>, in order; the names are escaped (RE2, so opening tags alone stay linear)."""
    return ".*?".join(rf"<{re.escape(t)}>.*?</{re.escape(t)}>" for t in tags)


_FENCED_JSON = re.compile(r"```(?:json)?\s*\n(.*?)```", re.DOTALL)


def json_payload(completion: str) -> str:
    """The text to parse as JSON: the first fenced block if there is one, else the whole completion."""
    fenced = _FENCED_JSON.search(completion)
    return (fenced.group(1) if fenced else completion).strip()


@RULES.register("format")
class FormatRule:
    """Passes when the completion has a required structure (boxed answer, think/answer, tags, JSON, code).

    Format criteria are the usual verifiable rubric items next to quality criteria (RLVR^2 001:L7
    discusses "response formatting" effects). Ours checks structure only, never content.
    """

    Params: ClassVar[type[RuleParams]] = FormatParams

    def __init__(self, params: FormatParams) -> None:
        self.params = params
        self._tags = (
            compile_user_pattern(_tags_pattern(params.tags), dotall=True, what="tags")
            if params.kind == "tags"
            else None
        )

    def __call__(self, completion: str, sample: Sample) -> RuleOutcome:
        kind = self.params.kind
        if kind == "boxed":
            return _passed(re.search(r"\\boxed\{[^{}]*\S[^{}]*\}", completion) is not None, kind=kind)
        if kind == "think_answer":
            m = re.fullmatch(r"\s*<think>(.*?)</think>(.*)", completion, re.DOTALL)
            return _passed(bool(m and m.group(2).strip()), kind=kind)
        if kind == "tags":
            assert self._tags is not None
            return _passed(self._tags.search(completion) is not None, kind=kind, tags=self.params.tags)
        if kind == "json":
            try:
                json.loads(json_payload(completion))
            except ValueError as err:
                return _passed(False, kind=kind, reason=f"not JSON: {err}")
            return _passed(True, kind=kind)
        return _passed(re.search(r"```.*?```", completion, re.DOTALL) is not None, kind=kind)


# --- JSON schema ------------------------------------------------------------------------------------


class JsonSchemaParams(RuleParams):
    schema_: dict[str, Any] = Field(
        alias="schema", description="A JSON Schema (draft 2020-12) the output must satisfy."
    )

    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    @model_validator(mode="after")
    def _check_schema(self) -> JsonSchemaParams:
        from jsonschema import Draft202012Validator
        from jsonschema.exceptions import SchemaError

        try:
            Draft202012Validator.check_schema(self.schema_)
        except SchemaError as err:
            raise ValueError(f"schema is not a valid JSON Schema: {err.message}") from None
        for where, pattern in _schema_patterns(self.schema_):
            try:
                _schema_regex(pattern, where)
            except PatternError as err:
                raise ValueError(str(err)) from None
        return self


def _schema_patterns(schema: Any, where: str = "schema") -> Iterator[tuple[str, str]]:
    """Every regular expression of a JSON Schema (``pattern`` values, ``patternProperties`` keys)."""
    stack: list[tuple[Any, str]] = [(schema, where)]
    while stack:
        node, at = stack.pop()
        if isinstance(node, dict):
            if isinstance(node.get("pattern"), str):
                yield f"{at}.pattern", node["pattern"]
            if isinstance(node.get("patternProperties"), dict):
                yield from ((f"{at}.patternProperties", key) for key in node["patternProperties"])
            stack.extend((child, f"{at}.{key}") for key, child in node.items())
        elif isinstance(node, list):
            stack.extend((child, f"{at}.{i}") for i, child in enumerate(node))


@functools.lru_cache(maxsize=256)
def _schema_regex(pattern: str, where: str = "schema pattern") -> UserPattern:
    return compile_user_pattern(pattern, what=where)


def _re2_pattern(validator: Any, pattern: str, instance: Any, schema: Any) -> Iterator[Any]:
    """jsonschema's ``pattern`` keyword on RE2 (its own uses Python's backtracking ``re``)."""
    from jsonschema.exceptions import ValidationError

    if validator.is_type(instance, "string") and _schema_regex(pattern).search(instance) is None:
        yield ValidationError(f"{instance[:80]!r} does not match {pattern!r}")


def _re2_pattern_properties(
    validator: Any, patterns: dict[str, Any], instance: Any, schema: Any
) -> Iterator[Any]:
    if not validator.is_type(instance, "object"):
        return
    for pattern, subschema in patterns.items():
        regex = _schema_regex(pattern)
        for key, value in instance.items():
            if regex.search(key) is not None:
                yield from validator.descend(value, subschema, path=key, schema_path=pattern)


@functools.lru_cache(maxsize=1)
def _linear_time_validator() -> Any:
    """Draft 2020-12 with its two regex keywords in linear time (a schema is user input)."""
    from jsonschema import Draft202012Validator, validators

    return validators.extend(
        Draft202012Validator, {"pattern": _re2_pattern, "patternProperties": _re2_pattern_properties}
    )


@RULES.register("json_schema")
class JsonSchemaRule:
    """Passes when the completion (or its fenced ```json block) is JSON valid under a JSON Schema.

    Validated with the ``jsonschema`` package (Draft 2020-12). A structured-output rubric item; the
    one-line JSON rubric judge (004:L43) asks the *judge* for JSON, whereas this checks the *policy's* output.
    """

    Params: ClassVar[type[RuleParams]] = JsonSchemaParams

    def __init__(self, params: JsonSchemaParams) -> None:
        self.validator = _linear_time_validator()(params.schema_)

    def __call__(self, completion: str, sample: Sample) -> RuleOutcome:
        try:
            value = json.loads(json_payload(completion))
        except ValueError as err:
            return _passed(False, reason=f"not JSON: {err}")
        errors = sorted(self.validator.iter_errors(value), key=lambda e: list(e.path))
        if errors:
            first = errors[0]
            where = "/".join(str(p) for p in first.path) or "(root)"
            return _passed(False, reason=f"{where}: {first.message}"[:300], errors=len(errors))
        return _passed(True)


# --- a trainer verifier -----------------------------------------------------------------------------


class VerifierRuleParams(RuleParams):
    name: str = Field(
        description="A verifier of the trainer's registry: exact, numeric, math, regex_format, ..."
    )
    params: dict[str, Any] = Field(default_factory=dict, description="The verifier's parameters.")


@RULES.register("verifier")
class VerifierRule:
    """Any verifier of the trainer's registry as a rubric criterion; its reward, clipped to [0, 1], is the fraction.

    Lets a correctness check (math-verify, numeric tolerance ...) sit in a rubric next to quality
    criteria, as rubric-based RLVR mixes verifiable and judged items (001:L7). Scores one completion at a
    time here; the batched verifier call is made by ``RubricScorer`` for speed.
    """

    Params: ClassVar[type[RuleParams]] = VerifierRuleParams

    def __init__(self, params: VerifierRuleParams) -> None:
        from trainer.errors import VerifierError
        from trainer.verifiers import build_verifier
        from trainer.verifiers.base import VERIFIERS

        if params.name in VERIFIERS and getattr(VERIFIERS.get(params.name), "absent_on_failure", False):
            raise ConfigError(
                f"verifier {params.name!r} is a reward source (a model or an endpoint), not a verifiable rule: list "
                "it under 'verifiers' with a weight instead of inside a rubric criterion"
            )
        try:
            self.verifier = build_verifier(params.name, params.params)
        except VerifierError as err:
            raise ConfigError(str(err)) from None

    def score_batch(self, completions: list[str], samples: list[Sample]) -> list[RuleOutcome]:
        results = self.verifier(completions, samples)
        return [
            RuleOutcome(min(1.0, max(0.0, float(r.reward))), {"correct": r.correct, **r.detail})
            for r in results
        ]

    def __call__(self, completion: str, sample: Sample) -> RuleOutcome:
        return self.score_batch([completion], [sample])[0]


def run_rule(rule: Rule, completions: Sequence[str], samples: Sequence[Sample]) -> list[RuleOutcome]:
    """One outcome per completion; a rule that raises gives ``detail['error']``, never an exception, so one
    bad completion does not fail a whole batch (training's rubric scorer and annotation scoring jobs)."""
    from trainer.verifiers.timeout_pool import describe_error

    if isinstance(rule, VerifierRule):
        try:
            return rule.score_batch(list(completions), list(samples))
        except Exception as err:
            return [RuleOutcome(0.0, {"error": describe_error(err)}) for _ in completions]
    outcomes = []
    for completion, sample in zip(completions, samples, strict=True):
        try:
            outcomes.append(rule(completion, sample))
        except Exception as err:
            outcomes.append(RuleOutcome(0.0, {"error": describe_error(err)}))
    return outcomes
