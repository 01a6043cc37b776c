"""Preview, store and delete uploaded data files, checked with the trainer's own rules.

An upload is read by ``trainer.data.row_check.read_data_file`` (the trainer's one bounded reader,
trainer/data/reader.py, which a training run's ``load_file_samples`` uses too) and every row is checked
against the column mapping by ``check_rows`` (the field rules of ``load_file_samples``), so a preview lists
all bad rows at once and a refused upload answers with them in ``extra.rows``; nothing is stored that a run
would refuse. Both stream the file and hold one row at a time, under ``upload_limits()``: the upload cap
counts decoded bytes too (a 13 KB Parquet file that decompresses to 400 MB is over a 200 MB cap), and each
cell and row is held to the trainer's limits (docs/datasets.md lists them, with the web process's measured
memory per upload). The trainer's modules are imported inside the functions: a web process pays for
pyarrow only when someone uploads a Parquet file.
"""

from __future__ import annotations

import re
import shutil
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO, TYPE_CHECKING, TypeVar

from django.conf import settings
from django.db import transaction

from trainer.errors import DataError
from webapp.core.errors import Conflict, InvalidInput
from webapp.core.paths import is_within, real
from webapp.datafiles.models import Dataset
from webapp.datafiles.preview import (
    DatasetPreview,
    Mapping,
    RowsInvalid,
    check_mapping,
    guess_mapping,
    head_rows,
    problem_rows,
)
from webapp.datafiles.selectors import dataset_usage
from webapp.teams.models import Project
from webapp.teams.permissions import EDIT_EXPERIMENTS, require_role
from webapp.teams.selectors import AnyUser

if TYPE_CHECKING:
    from trainer.data.limits import FileLimits
    from trainer.data.row_check import ParsedFile

MAX_NAME_CHARS = 200  # Dataset.name
T = TypeVar("T")


def dataset_preview(
    *,
    project: Project,
    actor: AnyUser,
    file: IO[bytes],
    filename: str,
    size: int,
    prompt_field: str | None = None,
    answer_field: str | None = None,
    answer_given: bool = False,
) -> DatasetPreview:
    """What uploading this file would store, and every row that would stop it, without storing anything.

    ``prompt_field`` None and ``answer_given`` False let the usual column names choose the mapping (the
    first preview of a file); ``answer_given`` with ``answer_field`` None means label-free data.
    """
    require_role(project=project, user=actor, minimum=EDIT_EXPERIMENTS)
    from trainer.data.row_check import check_rows

    basename = _safe_filename(filename)
    _check_size(basename, size)
    with _staged(file, basename) as staged:
        parsed = _parse(staged, basename)
        mapping = guess_mapping(parsed.columns, prompt_field, answer_field, answer_given)
        check_mapping(mapping, parsed)
        report = _checked(staged, basename, lambda: check_rows(
            parsed, prompt_field=mapping.prompt_field, answer_field=mapping.answer_field
        ))  # fmt: skip
        name = _default_name(basename)
        return DatasetPreview(
            filename=basename,
            format=parsed.format,
            rows=report.rows,
            columns=parsed.columns,
            head=head_rows(parsed),
            prompt_field=mapping.prompt_field,
            answer_field=mapping.answer_field,
            answer_guess=mapping.answer_guess,
            answer_candidates=list(mapping.answer_candidates),
            problems=problem_rows(report.problems, basename, str(staged)),
            problem_count=report.problem_count,
            name=name,
            name_taken=Dataset.objects.filter(project=project, name=name).exists(),
        )


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
    """Store the file once every row passes: refused rows come back in ``RowsInvalid.extra['rows']``."""
    require_role(project=project, user=actor, minimum=EDIT_EXPERIMENTS)
    from trainer.data.row_check import check_rows

    basename = _safe_filename(filename)
    name = (name or _default_name(basename)).strip()
    if Dataset.objects.filter(project=project, name=name).exists():
        raise InvalidInput(
            f"A dataset named {name!r} exists.", {"name": [f"A dataset named {name!r} exists."]}
        )
    _check_size(basename, size)
    with _staged(file, basename) as staged:
        parsed = _parse(staged, basename)
        check_mapping(Mapping(prompt_field, answer_field), parsed)
        report = _checked(staged, basename, lambda: check_rows(
            parsed, prompt_field=prompt_field, answer_field=answer_field
        ))  # fmt: skip
        if report.problem_count:
            raise RowsInvalid(report, basename, str(staged))
        fields = _columns(prompt_field, answer_field, parsed.columns)
        with transaction.atomic():
            dataset = Dataset.objects.create(
                project=project,
                name=name,
                path="",
                format=parsed.format,
                rows=report.rows,
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


def dataset_delete(*, dataset: Dataset, actor: AnyUser) -> None:
    """Delete a dataset no experiment, run or benchmark names; its file goes once the row is gone.

    A config that names a deleted dataset could not be launched (or resumed) again, so one in use is
    refused with the names of its users instead.
    """
    require_role(project=dataset.project, user=actor, minimum=EDIT_EXPERIMENTS)
    usage = dataset_usage(dataset=dataset)
    if usage.in_use:
        raise Conflict(
            f"Dataset {dataset.name!r} is used by {usage.describe()}: change or delete those first.",
            {
                "experiments": [e.name for e in usage.experiments],
                "benchmarks": [b.name for b in usage.benchmarks],
            },
        )
    path = dataset.path
    dataset.delete()
    if path and is_within(real(path), real(settings.RLVR_DATASETS_DIR)):  # never a file outside the uploads
        transaction.on_commit(lambda: Path(path).unlink(missing_ok=True))


@contextmanager
def _staged(file: IO[bytes], basename: str) -> Iterator[Path]:
    """The upload copied into a private temporary folder, removed afterwards (unless moved away)."""
    with tempfile.TemporaryDirectory(prefix="rlvr-upload-") as tmp:
        staged = Path(tmp) / basename
        with staged.open("wb") as out:
            shutil.copyfileobj(file, out)
        yield staged


def upload_limits() -> FileLimits:
    """The trainer's file limits with the upload cap (RLVR_MAX_UPLOAD_MB) on the bytes sent and, as well, on
    the bytes they decode to."""
    from trainer.data.limits import FileLimits

    cap = int(settings.RLVR_MAX_UPLOAD_MB) * 1024 * 1024
    return FileLimits(max_bytes=cap, max_decoded_bytes=cap)


def _check_size(basename: str, size: int) -> None:
    limit_mb = settings.RLVR_MAX_UPLOAD_MB
    if size > limit_mb * 1024 * 1024:
        message = f"{basename} is {size / 2**20:.1f} MB; the limit is {limit_mb} MB (RLVR_MAX_UPLOAD_MB)."
        raise InvalidInput(message, {"file": [message]})


def _parse(staged: Path, basename: str) -> ParsedFile:
    from trainer.data.row_check import check_rows, read_data_file

    parsed = _checked(staged, basename, lambda: read_data_file(staged, limits=upload_limits()))
    if not parsed.row_count:  # before any mapping is checked: an empty file has no columns to map
        _checked(staged, basename, lambda: check_rows(parsed))  # raises the loader's "has no rows"
    return parsed


def _checked(staged: Path, basename: str, step: Callable[[], T]) -> T:
    """``step()``, its DataError answered as a file error that names the upload, never the staging path."""
    try:
        return step()
    except DataError as err:
        message = str(err).replace(str(staged), basename)
        raise InvalidInput(message, {"file": [message]}) from None


def _default_name(basename: str) -> str:
    return Path(basename).stem[:MAX_NAME_CHARS] or "data"


def _columns(prompt_field: str, answer_field: str | None, meta: list[str]) -> list[str]:
    own = [prompt_field] + ([answer_field] if answer_field else [])
    return own + [c for c in meta if c not in own]


def _safe_filename(filename: str) -> str:
    base = Path(filename.replace("\\", "/")).name
    cleaned = re.sub(r"[^A-Za-z0-9._-]+", "_", base).lstrip(".")
    return cleaned or "data"
