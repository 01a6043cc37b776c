"""Preference pairs for reward-model training: (prompt, chosen, rejected), from three places.

- a JSON Lines file with ``prompt``, ``chosen`` and ``rejected`` (the format TRL's ``RewardTrainer`` reads,
  and what the pairwise annotation export writes), read through the one bounded reader
  (trainer/data/reader.py); every bad line is named with its field;
- verifier outcomes: every completion of a prompt with its correctness; a prompt with at least one correct
  and one incorrect completion gives pairs (a correct one chosen, an incorrect one rejected), at most
  ``per_prompt`` of them, drawn with a seeded generator, so the same outcomes give the same pairs;
- plain lists of dicts (the web app's pairwise annotation selector), checked like file rows.

Every source ends in ``dedupe`` and the ``MAX_PAIRS`` cap. Pure Python: no torch.
"""

from __future__ import annotations

import hashlib
import json
import random
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from trainer.data.limits import DEFAULT_LIMITS, FileLimits
from trainer.data.reader import RowReader
from trainer.errors import DataError

MAX_PAIRS = 100_000  # pairs one training job reads (about 10 epochs of a 7B RM over a night on one GPU)
MAX_TEXT_CHARS = 65_536  # one prompt, chosen or rejected text
MAX_PER_PROMPT = 64  # pairs one prompt may give from verifier outcomes
MAX_PROBLEMS_SHOWN = 10  # bad rows named in one error message
FIELDS = ("prompt", "chosen", "rejected")


@dataclass(frozen=True)
class PreferencePair:
    """One preference: ``chosen`` is the better completion of ``prompt`` than ``rejected``."""

    prompt: str
    chosen: str
    rejected: str

    def to_json(self) -> dict[str, str]:
        return {"prompt": self.prompt, "chosen": self.chosen, "rejected": self.rejected}


@dataclass(frozen=True)
class Outcome:
    """One scored completion: which prompt it answers (``prompt_id`` groups them), and whether it was correct."""

    prompt_id: str
    prompt: str
    completion: str
    correct: bool


def pair_problem(record: Mapping[str, Any]) -> str | None:
    """Why ``record`` is not a preference pair (naming the field), or None."""
    for field in FIELDS:
        if field not in record:
            return f"has no '{field}' field (a pair needs prompt, chosen and rejected)"
        value = record[field]
        if not isinstance(value, str):
            return f"field '{field}' is {type(value).__name__}, not text"
        if len(value) > MAX_TEXT_CHARS:
            return f"field '{field}' has {len(value):,} characters, more than {MAX_TEXT_CHARS:,}"
        if "\x00" in value:
            return f"field '{field}' contains a NUL character"
    if not record["chosen"].strip() or not record["rejected"].strip():
        return "field 'chosen' or 'rejected' is empty"
    if record["chosen"] == record["rejected"]:
        return "fields 'chosen' and 'rejected' are the same text: a pair needs two different completions"
    return None


def _raise_problems(source: str, problems: list[str], total: int) -> None:
    shown = "; ".join(problems[:MAX_PROBLEMS_SHOWN])
    more = f" (and {total - MAX_PROBLEMS_SHOWN} more)" if total > MAX_PROBLEMS_SHOWN else ""
    raise DataError(f"{source}: {total} bad pair(s): {shown}{more}. Fix or remove them and try again.")


def pairs_from_jsonl(
    path: Path, limits: FileLimits = DEFAULT_LIMITS, fmt: str = "jsonl"
) -> list[PreferencePair]:
    """Every pair of a JSON Lines file (or another format the bounded reader reads: json, csv, parquet),
    deduplicated; a DataError naming each bad line and its field."""
    pairs: list[PreferencePair] = []
    problems: list[str] = []
    bad = 0
    for row in RowReader(Path(path), fmt, limits):
        problem = row.problem if row.record is None else pair_problem(row.record)
        if problem is not None:
            bad += 1
            if len(problems) < MAX_PROBLEMS_SHOWN:
                problems.append(f"{row.where} {problem}")
            continue
        assert row.record is not None
        pairs.append(PreferencePair(*(row.record[f] for f in FIELDS)))
        if len(pairs) > MAX_PAIRS:
            raise DataError(f"{path} holds more than {MAX_PAIRS:,} pairs: split it and train on a part")
    if bad:
        _raise_problems(str(path), problems, bad)
    return _checked(dedupe(pairs), str(path))


def pairs_from_dicts(items: Iterable[Mapping[str, Any]], source: str = "pairs") -> list[PreferencePair]:
    """Pairs from dicts with prompt, chosen and rejected (the annotation selector's lists), deduplicated."""
    pairs: list[PreferencePair] = []
    problems: list[str] = []
    bad = 0
    for number, item in enumerate(items, start=1):
        problem = pair_problem(item)
        if problem is not None:
            bad += 1
            if len(problems) < MAX_PROBLEMS_SHOWN:
                problems.append(f"item {number} {problem}")
            continue
        pairs.append(PreferencePair(*(item[f] for f in FIELDS)))
        if len(pairs) > MAX_PAIRS:
            raise DataError(f"{source} holds more than {MAX_PAIRS:,} pairs: train on a part of them")
    if bad:
        _raise_problems(source, problems, bad)
    return _checked(dedupe(pairs), source)


def pairs_from_outcomes(
    outcomes: Iterable[Outcome], *, per_prompt: int = 8, seed: int = 0, max_pairs: int = MAX_PAIRS
) -> list[PreferencePair]:
    """Pairs (a correct completion chosen over an incorrect one of the same prompt), at most ``per_prompt``
    per prompt, drawn from all correct x incorrect combinations with ``random.Random(seed)``.

    >>> o = [Outcome("a", "1+1=", "#### 2", True), Outcome("a", "1+1=", "#### 3", False),
    ...      Outcome("b", "2+2=", "#### 5", False)]
    >>> pairs_from_outcomes(o)
    [PreferencePair(prompt='1+1=', chosen='#### 2', rejected='#### 3')]
    """
    if not 1 <= per_prompt <= MAX_PER_PROMPT:
        raise DataError(f"per_prompt must be between 1 and {MAX_PER_PROMPT}, got {per_prompt}")
    groups: dict[str, tuple[str, dict[str, None], dict[str, None]]] = {}
    for o in outcomes:
        prompt, right, wrong = groups.setdefault(o.prompt_id, (o.prompt, {}, {}))
        # A completion text counts once per prompt (ordered sets keep the first-seen order, hence determinism).
        (right if o.correct else wrong)[o.completion] = None
    rng = random.Random(f"pairs:{seed}")
    pairs: list[PreferencePair] = []
    for prompt_id in sorted(groups):
        prompt, right, wrong = groups[prompt_id]
        both = [(c, r) for c in right for r in wrong if c != r and c.strip() and r.strip()]
        if not both:
            continue
        for c, r in rng.sample(both, min(per_prompt, len(both))):
            pairs.append(PreferencePair(prompt, c, r))
        if len(pairs) >= max_pairs:
            break
    return dedupe(pairs)[:max_pairs]


def dedupe(pairs: Sequence[PreferencePair]) -> list[PreferencePair]:
    """The pairs in their order with repeats (the same prompt, chosen and rejected) left out."""
    return list(dict.fromkeys(pairs))


def _checked(pairs: list[PreferencePair], source: str) -> list[PreferencePair]:
    if not pairs:
        raise DataError(f"{source} holds no preference pairs: nothing to train a reward model on")
    return pairs


def pairs_hash(pairs: Sequence[PreferencePair]) -> str:
    """sha256 of the pairs in order: what a trained reward model records as its data."""
    digest = hashlib.sha256()
    for p in pairs:
        digest.update(json.dumps([p.prompt, p.chosen, p.rejected], ensure_ascii=False).encode())
        digest.update(b"\n")
    return digest.hexdigest()
