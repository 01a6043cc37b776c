"""Step segmenters: where each step of a completion ends, as half-open token spans (``StepSpans``).

A process reward scores a completion step by step, so the first thing it needs is the steps. Three segmenters,
registered in ``SEGMENTERS`` (each a name, a one-line description and a bounded params model, like the method
axes):

- ``lines``: a step ends after a run of separator characters (default ``\\n``, ``=`` and ``;``: the joints of the
  chain-arithmetic scratchpad, so its steps are the chain_arithmetic verifier's lines) and before the answer
  marker (default ``####``), so ``15*4-5=60-5=55;#### 55`` is ``15*4-5=`` | ``60-5=`` | ``55;`` | ``#### 55``;
- ``pattern``: a user RE2 pattern (trainer/user_regex.py); a step ends where each match ends;
- ``entropy``: the entropy-placed boundaries of EDU-PRM ("Entropy-Driven Uncertainty Process Reward Model"): a step
  ends after a token whose policy entropy is in the completion's top ``1 - quantile`` share, at least
  ``min_tokens`` tokens after the previous boundary. The entropies are those the rollout already carries
  (``RolloutBatch.entropies``): nothing is recomputed. How ours differs from EDU-PRM: the threshold is a quantile
  of each completion's own entropies, not a fixed value tuned on a dataset.

Spans are over the completion's tokens (index 0 = the first completion token), in order, cover every token once:
tokens before the first boundary belong to step 0, trailing whitespace and end tokens to the last step. A step
that holds only separators or whitespace joins the step before it (the verifier skips blank lines too). At most
``MAX_STEPS`` steps: the rest are merged into the last.

Characters are mapped to tokens by decoding each distinct token once (special tokens decode to nothing) and
joining the pieces, so a boundary inside a multi-character token ends that token's step. Torch-free.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

from pydantic import Field, field_validator

from trainer.bounds import BoundedModel
from trainer.registry import Registry
from trainer.user_regex import PatternError, check_user_pattern, compile_user_pattern

MAX_STEPS = 64
StepSpans = list[list[tuple[int, int]]]


class SegmenterParams(BoundedModel):
    """Base of every segmenter's params."""


class LinesParams(SegmenterParams):
    separators: list[str] = Field(
        default_factory=lambda: ["\n", "=", ";"],
        min_length=1,
        max_length=16,
        description="A step ends after a run of these (each 1-8 characters); the default is the joints of the "
        "chain-arithmetic scratchpad, so its steps are the chain_arithmetic verifier's lines.",
    )
    answer_marker: str = Field(
        "####",
        max_length=32,
        description="A step also ends before this marker, so the final answer is its own last step; '' for none.",
    )

    @field_validator("separators")
    @classmethod
    def _check_separators(cls, value: list[str]) -> list[str]:
        for sep in value:
            if not 1 <= len(sep) <= 8:
                raise ValueError(f"separator {sep!r} must be 1-8 characters long")
        return value


class PatternParams(SegmenterParams):
    pattern: str = Field(
        min_length=1,
        max_length=1000,
        description="An RE2 pattern; a step ends where each of its matches ends (e.g. '\\n+' or '(?:Step \\d+:)').",
    )

    @field_validator("pattern")
    @classmethod
    def _check_pattern(cls, value: str) -> str:
        try:
            check_user_pattern(value, what="process_reward.segmenter.params.pattern")
        except PatternError as err:
            raise ValueError(str(err)) from None
        return value


class EntropyParams(SegmenterParams):
    quantile: float = Field(
        0.9,
        ge=0.5,
        le=0.999,
        description="A step ends after a token whose entropy is at or above this quantile of the completion's "
        "token entropies (EDU-PRM's high-entropy boundaries).",
    )
    min_tokens: int = Field(
        3, ge=1, le=4096, description="Fewest tokens of a step (boundaries closer are skipped)."
    )


@dataclass(frozen=True)
class TokenText:
    """One completion's tokens as text: each token's decoded piece and where it starts in their join."""

    pieces: list[str]
    starts: list[int]  # [n] character offset of each token in ``text``
    text: str

    def token_at(self, char: int) -> int:
        """The index of the token holding character ``char`` (clamped to the tokens; a char past the text: the last)."""
        if not self.pieces:
            return 0
        lo, hi = 0, len(self.starts) - 1
        while lo < hi:  # the last token starting at or before char
            mid = (lo + hi + 1) // 2
            if self.starts[mid] <= char:
                lo = mid
            else:
                hi = mid - 1
        while lo + 1 < len(self.pieces) and not self.pieces[lo] and self.starts[lo + 1] <= char:
            lo += 1  # an empty piece (a special token) holds no character
        return lo

    def end_token(self, char_end: int) -> int:
        """The exclusive token end of a step whose characters end (exclusive) at ``char_end``."""
        if char_end <= 0:
            return 0
        return self.token_at(char_end - 1) + 1


def token_texts(token_ids: Sequence[Sequence[int]], tokenizer: Any) -> list[TokenText]:
    """Each completion's tokens decoded one by one (each distinct token once; special tokens decode to '')."""
    distinct = sorted({int(t) for row in token_ids for t in row})
    decoded = tokenizer.batch_decode([[t] for t in distinct], skip_special_tokens=True) if distinct else []
    piece = dict(zip(distinct, decoded, strict=True))
    out = []
    for row in token_ids:
        pieces = [piece[int(t)] for t in row]
        starts, at = [], 0
        for p in pieces:
            starts.append(at)
            at += len(p)
        out.append(TokenText(pieces, starts, "".join(pieces)))
    return out


def spans_from_ends(
    ends: Sequence[int], n: int, blank: Callable[[int, int], bool] | None = None
) -> list[tuple[int, int]]:
    """Half-open spans covering ``n`` tokens from exclusive step ends; a span ``blank`` says holds nothing but
    separators or whitespace joins the one before it (the first: the one after); at most MAX_STEPS spans."""
    if n <= 0:
        return []
    cuts = [*sorted({e for e in ends if 0 < e < n}), n]
    spans: list[tuple[int, int]] = []
    start = 0
    for end in cuts:
        spans.append((start, end))
        start = end
    if blank is not None and len(spans) > 1:
        merged: list[tuple[int, int]] = []
        for s, e in spans:
            if merged and blank(s, e):
                merged[-1] = (merged[-1][0], e)
            else:
                merged.append((s, e))
        if len(merged) > 1 and blank(*merged[0]):
            merged[1] = (merged[0][0], merged[1][1])
            merged.pop(0)
        spans = merged
    if len(spans) > MAX_STEPS:
        spans = [*spans[: MAX_STEPS - 1], (spans[MAX_STEPS - 1][0], n)]
    return spans


def _lines(tt: TokenText, entropies: Sequence[float] | None, params: LinesParams) -> list[tuple[int, int]]:
    text, seps = tt.text, sorted(params.separators, key=len, reverse=True)
    sep_chars: set[int] = set()  # character positions inside a separator
    at = 0
    while at < len(text):
        hit = next((s for s in seps if text.startswith(s, at)), None)
        if hit is None:
            at += 1
            continue
        sep_chars.update(range(at, at + len(hit)))
        at += len(hit)
    ends = [tt.end_token(c + 1) for c in sep_chars if c + 1 not in sep_chars]  # after each run of separators
    marker = params.answer_marker
    if marker:
        found = text.find(marker)
        while found >= 0 and len(ends) < 4 * MAX_STEPS:
            ends.append(tt.token_at(found))  # the marker's token starts a step
            found = text.find(marker, found + len(marker))

    def blank(s: int, e: int) -> bool:
        chars = "".join(tt.pieces[s:e])
        start = tt.starts[s] if s < len(tt.starts) else len(text)
        return all(ch.isspace() or (start + i) in sep_chars for i, ch in enumerate(chars))

    return spans_from_ends(ends, len(tt.pieces), blank)


def _pattern(
    tt: TokenText, entropies: Sequence[float] | None, params: PatternParams
) -> list[tuple[int, int]]:
    regex = compile_user_pattern(params.pattern, what="process_reward.segmenter.params.pattern")
    ends = []
    for match in regex.finditer(tt.text):
        if match.end() > match.start():
            ends.append(tt.end_token(match.end()))
        if len(ends) >= 4 * MAX_STEPS:
            break

    def blank(s: int, e: int) -> bool:
        return not "".join(tt.pieces[s:e]).strip()

    return spans_from_ends(ends, len(tt.pieces), blank)


def _entropy(
    tt: TokenText, entropies: Sequence[float] | None, params: EntropyParams
) -> list[tuple[int, int]]:
    n = len(tt.pieces)
    if entropies is None or n == 0:
        return spans_from_ends([], n)
    values = [float(x) for x in entropies[:n]]
    ordered = sorted(values)
    threshold = ordered[
        min(int(params.quantile * len(ordered)), len(ordered) - 1)
    ]  # equal entropies: no boundary
    ends, last = [], 0
    for t, h in enumerate(values[:-1]):
        if h >= threshold and h > ordered[0] and t + 1 - last >= params.min_tokens:
            ends.append(t + 1)
            last = t + 1
    return spans_from_ends(ends, n)


@dataclass(frozen=True)
class Segmenter:
    """A registered segmenter: its name, one-line description, params model and span function."""

    name: str
    description: str
    Params: type[SegmenterParams]
    spans: Callable[[TokenText, Sequence[float] | None, Any], list[tuple[int, int]]]

    kind: ClassVar[str] = "step segmenter"


SEGMENTERS: Registry[Segmenter] = Registry("step segmenter")
for _seg in (
    Segmenter(
        "lines",
        "A step ends after a run of separators (newline, '=', ';') and before the answer marker '####'.",
        LinesParams,
        _lines,
    ),
    Segmenter("pattern", "A step ends where each match of an RE2 pattern ends.", PatternParams, _pattern),
    Segmenter(
        "entropy",
        "EDU-PRM: a step ends after a high-entropy token (the completion's top quantile).",
        EntropyParams,
        _entropy,
    ),
):
    SEGMENTERS.register(_seg.name)(_seg)


def segment(
    batch_token_ids: Sequence[Sequence[int]],
    tokenizer: Any,
    texts: Sequence[str] | None,
    entropies: Sequence[Sequence[float]] | None,
    spec: Any,
) -> StepSpans:
    """The step spans of each completion (``batch_token_ids``: each cut to its real length). ``texts`` (the
    decoded completions) are not read: characters come from the tokens' own pieces, so offsets always agree;
    ``entropies`` [N][>= n] are read by 'entropy' only. ``spec`` has ``name`` and ``params`` (a params model or
    a mapping)."""
    seg = SEGMENTERS.get(spec.name)
    params = (
        spec.params if isinstance(spec.params, seg.Params) else seg.Params.model_validate(spec.params or {})
    )
    tts = token_texts(batch_token_ids, tokenizer)
    return [seg.spans(tt, None if entropies is None else entropies[i], params) for i, tt in enumerate(tts)]
