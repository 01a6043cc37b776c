"""Answer extraction shared by the verifiers: which part of a completion is "the answer".

Modes (``extract`` parameter of every answer-checking verifier):

- ``full``: the whole completion, stripped.
- ``first_line``: the first non-empty line, stripped.
- ``boxed``: the content of the last ``\\boxed{...}`` (or ``\\fbox{...}``), nested braces allowed, as in the
  MATH benchmark's ``last_boxed_only_string``; unlike it, a truncated last box gives *no* answer rather than
  falling back to an earlier one, and ``\\boxed 5`` (no braces) is read too.
- ``last_number``: the last integer, decimal, fraction (``3/4``, ``\\frac{3}{4}``), or scientific number, with
  thousands separators removed (``1,234`` -> ``1234``), ``−`` read as a minus, and a trailing ``%`` kept so
  the numeric verifier can decide what it means. A ``-`` glued to a preceding digit or letter is a range or
  subtraction, not a sign (``3-5`` -> ``5``).
- ``regex``: the *last* match of the user's ``pattern``: its group named ``answer`` if it has one, else its
  first capture group, else the whole match. Use inline flags such as ``(?is)``. The pattern is RE2 syntax
  (trainer/user_regex.py: linear-time matching, no lookarounds or backreferences), as is the tag rule below.
- ``answer_tag``: the content of the last ``<answer>...</answer>`` (tag name set by ``tag``); the same rule as
  ``reasoning_gym.utils.extract_answer``, re-implemented so that importing it does not load reasoning-gym.

Every mode returns ``Extraction(value, reason)``: ``value`` is None when nothing was found, and ``reason`` says
why (it goes to the dashboard's detail view).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

from pydantic import Field, model_validator

from trainer.errors import VerifierError
from trainer.user_regex import PatternError, UserPattern, compile_user_pattern
from trainer.verifiers.base import VerifierParams

ExtractMode = Literal["full", "first_line", "boxed", "last_number", "regex", "answer_tag"]

_GROUPED_INT = r"\d{1,3}(?:,\d{3})+(?!\d)"  # 1,234,567 (and not the "1,234" inside "1,2345")
_INT = rf"(?:{_GROUPED_INT}|\d+)"
# Scientific notation written out: "2 \times 10^{5}", "2\cdot10^5", "2×10^5", "1.5 x 10^-3", "2*10**5".
_TIMES = r"\s*(?:\\times|\\cdot|×|·|\*|x)\s*"
_POW_OF_TEN = r"\s*(?:\^|\*\*)\s*(?:\{{\s*(?P<{name}>[-+−]?\d+)\s*\}}|(?P<{name}2>[-+−]?\d+))"
_NUMBER_RE = re.compile(
    rf"""
    (?P<frac>\\[dt]?frac\{{\s*(?P<fnum>[-−]?\d+)\s*\}}\{{\s*(?P<fden>[-−]?\d+)\s*\}})
    |
    (?P<sign>(?<![\w.])[-−+])?                      # a sign only when not glued to a word or number
    (?:
      (?<![\w.])10{_POW_OF_TEN.format(name="tenexp")}  # a bare power of ten: 10^{{5}}, 10^-3
    |
      (?P<num>{_INT}(?:\.\d+)?|\.\d+)
      (?:(?P<exp>[eE][-+]?\d+)|{_TIMES}10{_POW_OF_TEN.format(name="pexp")})?  # 2e5, 2 \times 10^{{5}}
    )
    (?:\s*/\s*(?P<den>{_INT}))?                      # a fraction a/b
    (?P<pct>\s*\\?%)?
    """,
    re.VERBOSE,
)
_TAG_NAME_RE = re.compile(r"[A-Za-z_][\w.-]*")
_BOX_COMMANDS = ("\\boxed", "\\fbox")


@dataclass(frozen=True)
class Extraction:
    """What extraction found: ``value`` (None if nothing) and a short human ``reason``."""

    value: str | None
    reason: str


class ExtractParams(VerifierParams):
    """Parameters shared by the verifiers that extract an answer before checking it."""

    extract: ExtractMode = Field(
        "full",
        description="Which part of the completion is the answer: full, first_line, boxed (last \\boxed{}), "
        "last_number, regex (needs pattern) or answer_tag (last <answer>...</answer>, as reasoning-gym does).",
    )
    pattern: str | None = Field(
        None,
        description="Regular expression for extract='regex' (RE2 syntax: linear-time, no lookarounds or "
        "backreferences); the last match is used: its group named 'answer', else group 1, else the whole "
        "match. Example: 'answer is\\s*(\\S+)'.",
    )
    tag: str = Field("answer", description="Tag name for extract='answer_tag' (<tag>...</tag>).")

    @model_validator(mode="after")
    def _check_extraction(self) -> ExtractParams:
        # Reuse the Extractor's checks so that a bad pattern fails when the config is loaded.
        try:
            Extractor(self.extract, self.pattern, self.tag)
        except VerifierError as err:
            raise ValueError(str(err)) from None
        return self

    def extractor(self) -> Extractor:
        return Extractor(self.extract, self.pattern, self.tag)


class Extractor:
    """A compiled extraction rule; raises VerifierError on a bad combination of mode, pattern and tag."""

    def __init__(self, mode: ExtractMode = "full", pattern: str | None = None, tag: str = "answer") -> None:
        self.mode = mode
        self._regex: UserPattern | None = None
        if mode == "regex":
            if not pattern:
                raise VerifierError("extract='regex' needs a pattern, e.g. pattern: 'answer is\\s*(\\S+)'")
            try:
                self._regex = compile_user_pattern(pattern)
            except PatternError as err:
                raise VerifierError(str(err)) from None
        elif pattern is not None:
            raise VerifierError(
                f"pattern is only used with extract='regex' (extract is {mode!r}): remove pattern or set extract: regex"
            )
        if mode == "answer_tag":
            if not _TAG_NAME_RE.fullmatch(tag):
                raise VerifierError(
                    f"tag {tag!r} is not a valid tag name: use letters, digits, '_', '-' or '.', e.g. 'answer'"
                )
            self._regex = compile_user_pattern(
                rf"<{re.escape(tag)}>\s?(.*?)\s?</{re.escape(tag)}>", dotall=True
            )
        self.tag = tag

    def __call__(self, text: str) -> Extraction:
        if not isinstance(text, str):
            return Extraction(None, f"completion is {type(text).__name__}, not text")
        if not text.strip():
            return Extraction(None, "empty completion")
        if self.mode == "full":
            return Extraction(text.strip(), "whole completion")
        if self.mode == "first_line":
            return Extraction(text.strip().splitlines()[0].strip(), "first line")
        if self.mode == "boxed":
            return extract_boxed(text)
        if self.mode == "last_number":
            return extract_last_number(text)
        assert self._regex is not None
        if self.mode == "answer_tag":
            return self._last_tag(text)
        return self._last_regex_match(text)

    def _last_tag(self, text: str) -> Extraction:
        last = self._regex.last_match(text) if self._regex else None
        if last is None:
            return Extraction(None, f"no <{self.tag}>...</{self.tag}> in completion")
        value = last.group(1).strip()
        return (
            Extraction(value, f"last <{self.tag}> tag")
            if value
            else Extraction(None, f"<{self.tag}> tag is empty")
        )

    def _last_regex_match(self, text: str) -> Extraction:
        assert self._regex is not None
        match = self._regex.last_match(text)
        if match is None:
            return Extraction(None, "pattern did not match")
        if "answer" in self._regex.groupindex:
            value = match.group("answer")
        elif self._regex.groups:
            value = match.group(1)
        else:
            value = match.group(0)
        if value is None or not value.strip():
            return Extraction(None, "pattern matched but its answer group is empty")
        return Extraction(value.strip(), "last pattern match")


def extract_answer(
    text: str, mode: ExtractMode = "full", pattern: str | None = None, tag: str = "answer"
) -> Extraction:
    """One-off extraction (builds an ``Extractor``; reuse one when extracting many texts).

    >>> extract_answer("so the total is 1,234.", "last_number").value
    '1234'
    """
    return Extractor(mode, pattern, tag)(text)


def extract_boxed(text: str) -> Extraction:
    """Content of the last ``\\boxed{...}`` / ``\\fbox{...}``, braces balanced (escaped ``\\{`` ignored)."""
    start = max(text.rfind(cmd) for cmd in _BOX_COMMANDS)
    if start < 0:
        return Extraction(None, "no \\boxed{} in completion")
    cmd = next(c for c in _BOX_COMMANDS if text.startswith(c, start))
    i = start + len(cmd)
    rest = text[i:]
    if rest[:1].isalpha():  # another command, e.g. \boxedsymbol
        return Extraction(None, f"{cmd} is not followed by an argument")
    stripped = rest.lstrip()
    if not stripped.startswith("{"):
        # "\boxed 5": the argument runs to the next whitespace or $ (TeX reads one token; close enough).
        token = re.match(r"[^\s$]+", stripped)
        if token is None:
            return Extraction(None, f"{cmd} has no argument")
        return Extraction(token.group(0), f"last {cmd}")
    i = len(text) - len(stripped) + 1
    depth, j = 1, i
    while j < len(text):
        char = text[j]
        if char == "\\":
            j += 2  # skip \{ \} and any other escaped character
            continue
        if char == "{":
            depth += 1
        elif char == "}":
            depth -= 1
            if depth == 0:
                value = text[i:j].strip()
                return (
                    Extraction(value, f"last {cmd}{{}}") if value else Extraction(None, f"{cmd}{{}} is empty")
                )
        j += 1
    return Extraction(None, f"last {cmd}{{ is never closed (truncated completion?)")


def extract_last_number(text: str) -> Extraction:
    """The last number in ``text``, normalised: ``-1234.5``, ``3/4``, ``1.5e10``, ``50%``."""
    match = None
    for match in _NUMBER_RE.finditer(text):  # noqa: B007 -- only the last match counts
        pass
    if match is None:
        return Extraction(None, "no number in completion")
    if match.group("frac"):
        value = f"{match.group('fnum')}/{match.group('fden')}".replace("−", "-")
        return Extraction(value, "last number")
    sign = (match.group("sign") or "").replace("−", "-").replace("+", "")
    value = sign + _scientific(match)
    if match.group("den"):
        value += "/" + match.group("den").replace(",", "")
    if match.group("pct"):
        value += "%"
    return Extraction(value, "last number")


def _scientific(match: re.Match[str]) -> str:
    """The unsigned number of a ``_NUMBER_RE`` match in ``e`` notation: ``2 \\times 10^{5}`` -> ``2e5``.

    The exponent is part of the number (``2e5`` is 200000, never 2): a plain ``e``/``E`` exponent, a written
    out ``\\times 10^{k}`` / ``\\cdot 10^k`` / ``× 10^k``, or a bare ``10^{k}``.
    """
    ten = match.group("tenexp") or match.group("tenexp2")
    if ten is not None:
        return "1e" + ten.replace("−", "-")
    value = match.group("num").replace(",", "")
    written = match.group("pexp") or match.group("pexp2")
    if written is not None:
        return f"{value}e{written.replace('−', '-')}"
    return value + (match.group("exp") or "")


def normalize_scientific(text: str) -> str:
    """``text`` with a single written-out scientific number rewritten in ``e`` notation, else unchanged.

    >>> normalize_scientific("2 \\\\times 10^{5}")
    '2e5'
    """
    s = text.strip()
    match = _NUMBER_RE.fullmatch(s)
    if match is None or match.group("frac") or match.group("den") or match.group("pct"):
        return text
    sign = (match.group("sign") or "").replace("−", "-")
    return sign + _scientific(match)
