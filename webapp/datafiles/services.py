"""Store an uploaded data file after ``trainer.data.files.load_file_samples`` accepts it.

The trainer's loader reads files with ``datasets`` (no torch); it is imported inside the function so
a web process pays for it only when someone uploads. A file it rejects is answered with its message,
which names the line or row and the field; nothing is stored.
"""

from __future__ import annotations

import re
import shutil
import tempfile
from pathlib import Path
from typing import IO

from django.conf import settings
from django.db import transaction

from trainer.errors import DataError
from webapp.core.errors import InvalidInput
from webapp.datafiles.models import Dataset
from webapp.teams.models import Project
from webapp.teams.permissions import EDIT_EXPERIMENTS, require_role
from webapp.teams.selectors import AnyUser


def dataset_upload(
    *,
    project: Project,
    actor: AnyUser,
    file: IO[bytes],
    filename: str,
    size: int,
    name: str = "",
    prompt_field: str = "prompt",
    answer_field: str | None = "answer",
) -> Dataset:
    require_role(project=project, user=actor, minimum=EDIT_EXPERIMENTS)
    from trainer.data.files import load_file_samples, resolve_format

    basename = _safe_filename(filename)
    name = (name or Path(basename).stem).strip()
    if Dataset.objects.filter(project=project, name=name).exists():
        raise InvalidInput(f"A dataset named {name!r} exists.", {"name": [f"A dataset named {name!r} exists."]})
    limit_mb = settings.RLVR_MAX_UPLOAD_MB
    if size > limit_mb * 1024 * 1024:
        message = f"{basename} is {size / 2**20:.1f} MB; the limit is {limit_mb} MB (RLVR_MAX_UPLOAD_MB)."
        raise InvalidInput(message, {"file": [message]})
    with tempfile.TemporaryDirectory(prefix="rlvr-upload-") as tmp:
        staged = Path(tmp) / basename
        with staged.open("wb") as out:
            shutil.copyfileobj(file, out)
        try:
            fmt = resolve_format(staged)
            samples = load_file_samples(staged, prompt_field=prompt_field, answer_field=answer_field)
        except DataError as err:
            message = str(err).replace(str(staged), basename)
            raise InvalidInput(message, {"file": [message]}) from None
        fields = _columns(prompt_field, answer_field, list(samples[0].meta))
        with transaction.atomic():
            dataset = Dataset.objects.create(
                project=project,
                name=name,
                path="",
                format=fmt,
                rows=len(samples),
                fields=fields,
                prompt_field=prompt_field,
                answer_field=answer_field or "",
                created_by=actor if actor.is_authenticated else None,
            )
            final = Path(settings.RLVR_DATASETS_DIR) / str(project.pk) / f"{dataset.pk}-{basename}"
            final.parent.mkdir(parents=True, exist_ok=True)
            shutil.move(staged, final)
            dataset.path = str(final)
            dataset.save(update_fields=["path"])
    return dataset


def _columns(prompt_field: str, answer_field: str | None, meta: list[str]) -> list[str]:
    own = [prompt_field] + ([answer_field] if answer_field else [])
    return own + [c for c in meta if c not in own]


def _safe_filename(filename: str) -> str:
    base = Path(filename.replace("\\", "/")).name
    cleaned = re.sub(r"[^A-Za-z0-9._-]+", "_", base).lstrip(".")
    return cleaned or "data"
