"""Which server folders a config from the browser or the API may name as a model, and what a name means.

A config typed into the web runs on a worker that can read the server's files, so a model field
(``model.name_or_path``, ``teacher.name_or_path``, ``rubric.judge_model.name_or_path``) may only be:

- a built-in ``tiny:`` model (trainer/models/tiny_model.py builds it locally);
- ``checkpoint:<id>``, a checkpoint of a run in the same project (the ids the benchmarks API and
  ``GET /api/runs/<id>/checkpoints/`` use; resolved by webapp/experiments/config_paths.py);
- a folder under one of ``settings.RLVR_MODEL_ROOTS``: an absolute path inside a root, or a path relative
  to a root such as ``Qwen/Qwen2.5-0.5B`` (looked up under each root in turn). There is no hub here, so a
  hub-style name works only as a local folder under a root; nothing is downloaded.

Both forms are resolved with ``os.path.realpath`` and checked against the realpath'd roots, so neither
``..`` nor a symlink leads out of a root. The run and upload folders (RLVR_RUNS_DIR, RLVR_DATASETS_DIR)
never count as model folders, even inside a root: other projects' checkpoints and files live there.
A refusal says what is allowed; it is raised before anything outside a root is looked at, so it tells
nothing about which files exist there. The ``rlvr`` CLI, run by the machine's owner, is not confined.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from django.conf import settings

from webapp.core.errors import InvalidInput

TINY_PREFIX = "tiny:"
CHECKPOINT_PREFIX = "checkpoint:"
DATASET_PREFIX = "dataset:"


def real(path: str | Path) -> Path:
    """``path`` with every symlink and ``..`` resolved (it need not exist)."""
    return Path(os.path.realpath(path))


def is_within(path: Path, root: Path) -> bool:
    """Whether real path ``path`` is ``root`` or lies under it (both already realpath'd)."""
    return path == root or root in path.parents


def model_roots() -> list[Path]:
    return [real(root) for root in settings.RLVR_MODEL_ROOTS]


def _private_folders() -> list[Path]:
    return [real(settings.RLVR_RUNS_DIR), real(settings.RLVR_DATASETS_DIR)]


def allowed_models_text() -> str:
    """What a model field accepts, for error messages and help texts."""
    roots = ":".join(str(root) for root in settings.RLVR_MODEL_ROOTS)
    return (
        f"use a tiny: model (e.g. tiny:addition), a checkpoint of a run in this project ({CHECKPOINT_PREFIX}<id>, "
        f"listed by GET /api/runs/<run id>/checkpoints/), or a folder under RLVR_MODEL_ROOTS ({roots})"
    )


def refuse_model(field: str, value: str, why: str) -> InvalidInput:
    message = f"{field.removeprefix('config.')} {value!r} {why}; {allowed_models_text()}"
    return InvalidInput(message, {field: [message]})


def model_folder(value: str, *, field: str, must_exist: bool) -> Path | None:
    """The real folder under a model root that ``value`` (not a tiny: or checkpoint: name) names.

    ``field`` (``config.model.name_or_path``) keys the error. With ``must_exist`` False (a config being
    saved) a name whose folder is not there yet is accepted when it cannot lead out of a root, and None
    comes back; at launch and on the worker ``must_exist`` is True and the folder must be a directory.
    """
    if not value.strip() or "\x00" in value:
        raise refuse_model(field, value, "is not a model name")
    roots, private = model_roots(), _private_folders()
    candidates = [real(value)] if os.path.isabs(value) else [real(root / value) for root in roots]
    for candidate in candidates:
        if not any(is_within(candidate, root) for root in roots):
            raise refuse_model(field, value, "is outside the allowed model folders")
        if any(is_within(candidate, folder) for folder in private):
            raise refuse_model(
                field, value, "is inside the run or upload folders, which hold other projects' files"
            )
    for candidate in candidates:
        if candidate.is_dir():
            return candidate
    if must_exist:
        raise refuse_model(field, value, "is not a folder under the allowed model folders")
    return None


def check_tiny_name(value: str, *, field: str) -> str:
    """A ``tiny:`` name as trainer/models/tiny_model.py names its built-ins (``tiny:addition``); it never is a path."""
    if not re.fullmatch(r"tiny:[a-z0-9][a-z0-9_-]*", value):
        raise refuse_model(field, value, "is not a built-in tiny: model name")
    return value


def parse_reference(value: str, prefix: str) -> int | None:
    """The id of ``<prefix><id>`` (``dataset:12`` -> 12); None when ``value`` has another form."""
    if not value.startswith(prefix):
        return None
    digits = value.removeprefix(prefix).strip()
    return int(digits) if digits.isascii() and digits.isdigit() else -1
