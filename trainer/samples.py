"""The unit of training data: one prompt with what is needed to verify answers to it."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class Sample:
    """One prompt of a dataset or procedural task.

    ``prompt`` is the raw problem text (before the prompt template is applied); ``answer`` the reference
    answer as text (None for label-free tasks); ``meta`` carries task-specific data a verifier may need
    (e.g. the reasoning-gym entry, code test cases). ``id`` is stable across runs for the same data.
    """

    id: str
    prompt: str
    answer: str | None = None
    meta: dict[str, Any] = field(default_factory=dict)
