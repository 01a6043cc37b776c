"""Step-labelled files: Math-Shepherd's and PRM800K's formats read into (prompt, steps, labels) examples.

Read through the one bounded reader (trainer/data/reader.py ``RowReader``: every row held to the file limits), at
most ``max_examples`` examples and ``MAX_STEPS`` steps each (later steps are dropped). A label is a float in [0, 1]:
1.0 the step is right, 0.0 it is wrong (PRM800K's neutral rating: ``neutral``, 1.0 by default, as "Let's Verify
Step by Step" counts a neutral step as no error when it looks for the first wrong one).

- Math-Shepherd (Wang et al. 2024, "Math-Shepherd: Verify and Reinforce LLMs Step-by-step without Human
  Annotations"): a row has ``input`` (the question and the steps, each followed by the step tag ``ки``) and
  ``label`` (the same text with each tag replaced by ``+`` or ``-``). The prompt is the text before ``Step 1:``
  when the first piece has it, else the first piece's first line;
- PRM800K (Lightman et al. 2023, "Let's Verify Step by Step"): a row has ``question.problem`` and ``label.steps``,
  each step a list of ``completions`` rated -1, 0 or 1 and the ``chosen_completion`` (when it is null, at the
  step where the labeller found the error, the first completion rated -1, else the first).

A row that does not have the format's fields is skipped and counted (``StepLabelFile.skipped``, with the first
problem in words). Torch-free.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from trainer.data.limits import DEFAULT_LIMITS, FileLimits
from trainer.data.reader import RowReader
from trainer.errors import DataError
from trainer.process.steps import MAX_STEPS

MATH_SHEPHERD_TAG = "ки"
LabelFormat = Literal["math_shepherd", "prm800k"]
_FORMATS = {".jsonl": "jsonl", ".json": "json", ".csv": "csv", ".parquet": "parquet"}


@dataclass(frozen=True)
class StepExample:
    prompt: str
    steps: list[str]
    labels: list[float]  # [len(steps)] in [0, 1]


@dataclass
class StepLabelFile:
    examples: list[StepExample] = field(default_factory=list)
    skipped: int = 0
    first_problem: str | None = None


def read_step_labels(
    path: Path,
    fmt: LabelFormat,
    *,
    max_examples: int = 100_000,
    neutral: float = 1.0,
    step_tag: str = MATH_SHEPHERD_TAG,
    limits: FileLimits = DEFAULT_LIMITS,
) -> StepLabelFile:
    """The examples of a step-labelled file (see the module docstring); DataError for a file-level problem."""
    file_format = _FORMATS.get(path.suffix.lower())
    if file_format is None:
        raise DataError(f"{path.name}: a step-labelled file is .jsonl, .json, .csv or .parquet")
    if not 0.0 <= neutral <= 1.0:
        raise DataError("neutral must be between 0 and 1")
    out = StepLabelFile()
    parse = _math_shepherd if fmt == "math_shepherd" else _prm800k
    for row in RowReader(path, file_format, limits):
        if len(out.examples) >= max_examples:
            break
        problem = row.problem
        example = None
        if row.record is not None:
            try:
                example = parse(row.record, neutral=neutral, step_tag=step_tag)
            except (KeyError, TypeError, ValueError, IndexError) as err:
                problem = f"not a {fmt} row ({type(err).__name__}: {str(err)[:120]})"
        if example is None:
            out.skipped += 1
            out.first_problem = out.first_problem or f"{row.where}: {problem or 'no steps'}"
            continue
        out.examples.append(example)
    return out


def _math_shepherd(record: dict[str, Any], *, neutral: float, step_tag: str) -> StepExample | None:
    text, label = record["input"], record["label"]
    if not isinstance(text, str) or not isinstance(label, str):
        raise TypeError("'input' and 'label' must be text")
    pieces = text.split(step_tag)
    if len(pieces) < 2:
        return None
    labels, at = [], 0
    for piece in pieces[:-1]:  # the label text has '+' or '-' where the input has the tag
        at += len(piece)
        mark = label[at : at + 1]
        if mark not in ("+", "-"):
            raise ValueError(f"label has {mark!r} where the input has the step tag; expected '+' or '-'")
        labels.append(1.0 if mark == "+" else 0.0)
        at += 1
    first = pieces[0]
    cut = first.find("Step 1:")
    if cut < 0:
        cut = first.find("\n") + 1 if "\n" in first else 0
    prompt, steps = first[:cut], [first[cut:], *pieces[1:-1]]
    steps = [s.strip("\n") for s in steps]
    return StepExample(prompt.strip(), steps[:MAX_STEPS], labels[:MAX_STEPS])


def _rating(value: Any, neutral: float) -> float:
    rating = int(value)
    if rating not in (-1, 0, 1):
        raise ValueError(f"rating {value!r} is not -1, 0 or 1")
    return 1.0 if rating == 1 else 0.0 if rating == -1 else neutral


def _chosen(step: dict[str, Any]) -> dict[str, Any]:
    completions = step["completions"]
    if not isinstance(completions, list) or not completions:
        raise ValueError("a step without completions")
    chosen = step.get("chosen_completion")
    if isinstance(chosen, int) and 0 <= chosen < len(completions):
        return completions[chosen]  # type: ignore[no-any-return]
    rated_wrong = [c for c in completions if isinstance(c, dict) and c.get("rating") == -1]
    return rated_wrong[0] if rated_wrong else completions[0]  # type: ignore[no-any-return]


def _prm800k(record: dict[str, Any], *, neutral: float, step_tag: str) -> StepExample | None:
    problem = record["question"]["problem"]
    steps_in = record["label"]["steps"]
    if not isinstance(problem, str) or not isinstance(steps_in, list):
        raise TypeError("question.problem must be text and label.steps a list")
    steps, labels = [], []
    for step in _first(steps_in, MAX_STEPS):
        chosen = _chosen(step)
        steps.append(str(chosen["text"]))
        labels.append(_rating(chosen["rating"], neutral))
    return StepExample(problem, steps, labels) if steps else None


def _first(items: list[Any], n: int) -> Iterator[Any]:
    yield from items[:n]
