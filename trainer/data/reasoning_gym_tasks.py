"""Procedural tasks from the reasoning-gym package (Stojanovski et al. 2025), generated locally.

``reasoning_gym.create_dataset(task, size=..., seed=..., **task_config)`` builds entries
``{"question", "answer", "metadata"}`` deterministically from the seed. Each becomes a Sample whose
``meta["entry"]`` is a JSON-serialisable copy of the entry (tuples become lists), so the reasoning-gym
verifier can call the task's own ``score_answer(answer, entry)`` after a checkpoint round trip.

The factory's own errors are a bare ``TypeError`` for an unknown keyword and an ``AssertionError`` for a
bad value; we check the keys against the task's config dataclass first and turn both into a DataError
that names the task and the key.
"""

from __future__ import annotations

import dataclasses
import difflib
from typing import Any

from trainer.errors import DataError
from trainer.jsonable import to_jsonable
from trainer.samples import Sample

# Passed by us from data.size / data.data_seed; allowing them in task_config would give two sources of truth.
_RESERVED_KEYS = {"size": "data.size", "seed": "data.data_seed"}


def reasoning_gym_task_names() -> list[str]:
    """Every task name the installed reasoning-gym registers, sorted."""
    from reasoning_gym.factory import DATASETS  # imported here: reasoning_gym costs ~1 s to import

    return sorted(DATASETS)


def reasoning_gym_samples(
    task: str, *, size: int, seed: int, task_config: dict[str, Any] | None = None
) -> list[Sample]:
    """``size`` Samples of reasoning-gym ``task``, identical for the same seed and task_config.

    Ids are ``<task>-<index>``; ``meta`` is ``{"task": task, "entry": <the entry, JSON-serialisable>}``.
    """
    import reasoning_gym

    options = dict(task_config or {})
    _check_task_config(task, options)
    try:
        dataset = reasoning_gym.create_dataset(task, size=size, seed=seed, **options)
    except (AssertionError, ValueError, TypeError) as err:
        raise DataError(
            f"reasoning-gym task {task!r} rejected data.task_config {options}: {str(err) or type(err).__name__}"
        ) from err
    samples = []
    for i in range(size):
        entry = to_jsonable(dataset[i])
        samples.append(
            Sample(
                id=f"{task}-{i}",
                prompt=str(entry["question"]),
                answer=None if entry.get("answer") is None else str(entry["answer"]),
                meta={"task": task, "task_config": to_jsonable(options), "entry": entry},
            )
        )
    return samples


def _check_task_config(task: str, options: dict[str, Any]) -> None:
    from reasoning_gym.factory import DATASETS

    if task not in DATASETS:
        names = sorted(DATASETS)
        close = difflib.get_close_matches(task, names, n=3, cutoff=0.6)
        hint = f"did you mean {', '.join(close)}? " if close else ""
        raise DataError(
            f"unknown reasoning-gym task {task!r}; {hint}{len(names)} tasks are available, e.g. "
            f"{', '.join(names[:12])}, ... (see reasoning_gym.factory.DATASETS for all)"
        )
    for key, setting in _RESERVED_KEYS.items():
        if key in options:
            raise DataError(f"data.task_config must not set {key!r}: set {setting} instead")
    _, config_cls = DATASETS[task]
    valid = [f.name for f in dataclasses.fields(config_cls) if f.name not in _RESERVED_KEYS]
    for key in options:
        if key not in valid:
            raise DataError(
                f"data.task_config has key {key!r}, which reasoning-gym task {task!r} does not know; "
                f"valid keys: {', '.join(valid)}"
            )
