"""User-supplied regular expressions, run by RE2 (google-re2): matching time is linear in the text.

Why: Python's ``re`` backtracks, so a pattern such as ``(a+)+$`` on 27 ``a``s and a ``b`` takes seconds, and
each extra character doubles it (catastrophic backtracking); in the web process that froze every request,
and in training it froze the step. RE2 (Russ Cox, "Regular Expression Matching Can Be Simple And Fast")
simulates the automaton instead of backtracking, so one search costs at most (text length) x (program size).
Every pattern a user types (verifier ``pattern`` parameters, answer extraction, rubric regex rules, the
judge's parse pattern, shaping and answer-span patterns) is compiled here; fixed patterns written in this
code base keep using ``re``.

What differs from Python's ``re`` (RE2 syntax, https://github.com/google/re2/wiki/Syntax):

- refused, with an error that names the construct: lookahead ``(?=...)`` / ``(?!...)``, lookbehind
  ``(?<=...)`` / ``(?<!...)``, backreferences ``\\1`` / ``(?P=name)``, atomic groups ``(?>...)``,
  possessive quantifiers ``a++``, conditionals ``(?(1)...)``, the verbose flag ``(?x)``, ``(?#...)`` comments
  and counted repetitions above 1000;
- ``\\Z`` and ``\\uXXXX`` are accepted and mean what they mean in Python (RE2 spells them ``\\z`` and
  ``\\x{XXXX}``);
- ``\\d``, ``\\w``, ``\\s`` and ``\\b`` are ASCII-only (use ``\\p{Nd}``, ``\\pL`` for Unicode classes), and
  ``$`` without ``(?m)`` matches only at the very end (Python's also matches before a final newline).

Limits: a pattern has at most ``MAX_PATTERN_CHARS`` characters and its compiled program at most
``MAX_PROGRAM_SIZE`` instructions, so the per-character cost of a search is bounded too. One search is
linear; ``last_match`` walks every match (``finditer``), which is at most quadratic for patterns whose
attempts read far past their matches. Torch-free: the web process validates configs with it.

>>> compile_user_pattern(r"<think>.*?</think>\\s*<answer>.*?</answer>", dotall=True).fullmatch(
...     "<think>a\\nb</think> <answer>4</answer>") is not None
True
>>> compile_user_pattern(r"(a+)+$").search("a" * 40 + "b") is None
True
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

import re2  # type: ignore[import-untyped]  # google-re2: no type information shipped

MAX_PATTERN_CHARS = 4000
MAX_PROGRAM_SIZE = 5000  # RE2 instructions; '\pL' alone is ~1200, the default think/answer pattern 55
MAX_MEMORY_BYTES = 8 << 20  # RE2's own budget for the compiled program and its DFA cache (its default)
MAX_REPEAT = 1000  # RE2's largest counted repetition {n,m}

_HEX = frozenset("0123456789abcdefABCDEF")
_SYNTAX = "patterns run in linear time (RE2 syntax); rewrite without it"

# RE2's "invalid perl operator: <fragment>" -> what the user wrote, most specific first.
_GROUP_CONSTRUCTS: tuple[tuple[str, str], ...] = (
    ("(?=", "lookahead (?=...)"),
    ("(?!", "negative lookahead (?!...)"),
    ("(?<=", "lookbehind (?<=...)"),
    ("(?<!", "negative lookbehind (?<!...)"),
    ("(?>", "atomic group (?>...)"),
    ("(?(", "conditional group (?(id)yes|no)"),
    ("(?#", "comment group (?#...)"),
    ("(?x", "verbose flag (?x)"),
)
_HINTS = {
    "backreference": "capture the text and compare it in code, or spell out the alternatives",
    "possessive quantifier": "a plain quantifier never backtracks catastrophically here",
    "atomic group (?>...)": "a plain group never backtracks catastrophically here",
}


class PatternError(ValueError):
    """A user pattern that cannot be compiled; the message says what to change."""


class Match:
    """One match, ``re.Match``-like: ``group``, ``start``, ``end`` and ``span`` take numbers or group names."""

    __slots__ = ("_match", "_names")

    def __init__(self, match: Any, names: Mapping[str, int]) -> None:
        self._match = match
        self._names = names

    def group(self, *groups: int | str) -> Any:
        return self._match.group(*groups)

    def groups(self) -> tuple[str | None, ...]:
        return tuple(self._match.groups())

    def start(self, group: int | str = 0) -> int:
        return int(self._match.start(self._number(group)))

    def end(self, group: int | str = 0) -> int:
        return int(self._match.end(self._number(group)))

    def span(self, group: int | str = 0) -> tuple[int, int]:
        return self.start(group), self.end(group)

    def _number(self, group: int | str) -> int:
        if isinstance(group, int):
            return group
        try:
            return self._names[group]
        except KeyError:
            raise IndexError(f"no group named {group!r}") from None


@dataclass(frozen=True)
class UserPattern:
    """A compiled user pattern with ``re``-like helpers. Picklable (RE2 re-compiles it on load)."""

    pattern: str
    _regex: Any

    @property
    def groups(self) -> int:
        """Number of capture groups."""
        return int(self._regex.groups)

    @property
    def groupindex(self) -> Mapping[str, int]:
        """Named groups -> their numbers."""
        return dict(self._regex.groupindex)

    @property
    def program_size(self) -> int:
        return int(self._regex.programsize)

    def search(self, text: str) -> Match | None:
        return self._wrap(self._regex.search(text))

    def match(self, text: str) -> Match | None:
        return self._wrap(self._regex.match(text))

    def fullmatch(self, text: str) -> Match | None:
        return self._wrap(self._regex.fullmatch(text))

    def finditer(self, text: str) -> Iterator[Match]:
        names = self.groupindex
        return (Match(m, names) for m in self._regex.finditer(text))

    def last_match(self, text: str) -> Match | None:
        """The last of the non-overlapping matches, left to right (what ``list(finditer(text))[-1]`` gives)."""
        last = None
        for last in self._regex.finditer(text):  # noqa: B007 -- only the last match counts
            pass
        return self._wrap(last)

    def _wrap(self, match: Any) -> Match | None:
        return None if match is None else Match(match, self.groupindex)


def compile_user_pattern(
    pattern: str,
    *,
    dotall: bool = False,
    ignore_case: bool = False,
    multiline: bool = False,
    what: str = "pattern",
) -> UserPattern:
    """Compile ``pattern`` with RE2; raise ``PatternError`` naming ``what`` (the setting) and the fix.

    ``dotall``: '.' also matches newlines; ``ignore_case``: case-insensitive; ``multiline``: '^' and '$'
    match at line breaks. Inline flags ``(?i)``, ``(?s)``, ``(?m)`` and ``(?i:...)`` work too.
    """
    if not isinstance(pattern, str):
        raise PatternError(f"{what} must be text, got {type(pattern).__name__}")
    if len(pattern) > MAX_PATTERN_CHARS:
        raise PatternError(
            f"{what} is {len(pattern)} characters long; the limit is {MAX_PATTERN_CHARS}: shorten it"
        )
    options = re2.Options()
    options.log_errors = False
    options.max_mem = MAX_MEMORY_BYTES
    options.dot_nl = dotall
    options.case_sensitive = not ignore_case
    source = ("(?m)" if multiline else "") + python_to_re2(pattern)
    try:
        regex = re2.compile(source, options)
    except re2.error as err:
        raise PatternError(explain(pattern, _message(err), what=what)) from None
    if regex.programsize > MAX_PROGRAM_SIZE:
        raise PatternError(
            f"{what} {shown(pattern)} is too large: it compiles to {regex.programsize} instructions and the "
            f"limit is {MAX_PROGRAM_SIZE}; use fewer or smaller counted repetitions and Unicode classes"
        )
    return UserPattern(pattern, regex)


def check_user_pattern(pattern: str, **flags: Any) -> None:
    """Raise ``PatternError`` if ``compile_user_pattern`` would (for config validators)."""
    compile_user_pattern(pattern, **flags)


def python_to_re2(pattern: str) -> str:
    """The spellings that mean the same in Python and differ in RE2: ``\\Z`` becomes ``\\z``, and
    ``\\uXXXX`` / ``\\UXXXXXXXX`` become ``\\x{XXXX}``.

    >>> python_to_re2(r"done\\Z") == r"done\\z"
    True
    >>> python_to_re2(r"caf\\u00e9") == r"caf\\x{00e9}"
    True
    """
    out: list[str] = []
    i = 0
    while i < len(pattern):
        char = pattern[i]
        if char != "\\" or i + 1 >= len(pattern):
            out.append(char)
            i += 1
            continue
        pair = pattern[i : i + 2]
        width = {"\\u": 4, "\\U": 8}.get(pair, 0)
        digits = pattern[i + 2 : i + 2 + width]
        if width and len(digits) == width and all(c in _HEX for c in digits):
            out.append("\\x{" + digits + "}")
            i += 2 + width
            continue
        out.append("\\z" if pair == "\\Z" else pair)
        i += 2
    return "".join(out)


def explain(pattern: str, error: str, *, what: str = "pattern") -> str:
    """RE2's error (e.g. ``"invalid perl operator: (?="``) for ``pattern`` turned into what to change."""
    kind, _, fragment = error.partition(": ")
    construct = None
    if kind == "invalid perl operator":
        if fragment.startswith("(?P"):
            construct = (
                "named backreference (?P=name)" if "(?P=" in pattern else f"group syntax {fragment}..."
            )
        else:
            construct = next((name for start, name in _GROUP_CONSTRUCTS if fragment.startswith(start)), None)
            construct = construct or f"group syntax {fragment}..."
    elif kind == "invalid escape sequence" and fragment[1:2].isdigit() and fragment[1:2] != "0":
        construct = f"backreference {fragment}"
    elif kind == "bad repetition operator" and fragment.endswith("+") and len(fragment) == 2:
        construct = f"possessive quantifier {fragment}"
    elif kind == "invalid repetition size":
        return (
            f"{what} {shown(pattern)}: the counted repetition {fragment} is larger than {MAX_REPEAT}, the most "
            "RE2 (linear-time matching) allows; use + or * instead"
        )
    elif kind == "pattern too large - compile failed":
        return (
            f"{what} {shown(pattern)} is too large to compile: use fewer or smaller counted repetitions and "
            "Unicode classes"
        )
    if construct is None:
        return (
            f"{what} is not a valid regular expression ({shown(pattern)}: {error}); fix it or escape special "
            "characters with a backslash (RE2 syntax)"
        )
    hint = next((h for key, h in _HINTS.items() if key in construct), None)
    return f"{what} {shown(pattern)}: {construct} is not supported: {_SYNTAX}" + (
        f" ({hint})" if hint else ""
    )


def shown(pattern: str, limit: int = 80) -> str:
    """``repr`` of the pattern, capped for a message."""
    return repr(pattern if len(pattern) <= limit else pattern[: limit - 3] + "...")


def _message(err: BaseException) -> str:
    raw = err.args[0] if err.args else str(err)
    return raw.decode("utf-8", "replace") if isinstance(raw, bytes) else str(raw)
