"""Where rollouts' per-token arrays live: files under a folder, or objects in an S3-compatible store.

A step of 256 rollouts x 512 tokens carries ~6 MB of token ids, per-token floats and token strings; kept
inline in PostgreSQL (``Rollout.token_data`` / ``tokens``, before this store) they made the rollout table
most of the database, were written inside the training step and were never thrown away. Now one object
per written step (webapp/experiments/token_blobs.py) goes here and a rollout row keeps only its key,
offset and size, so reading one rollout is one ranged read.

``settings.RLVR_TOKEN_STORE`` picks the store: a folder (the embedded default, ``$RLVR_DATA_DIR/rollout-tokens``;
the web server and every worker must see the same one) or ``s3://bucket/prefix`` (with
``RLVR_S3_ENDPOINT_URL`` for MinIO or another S3-compatible server, and the standard ``AWS_*``
credentials, which boto3 reads itself).

Keys are made here only, from integers (run id, step, a random suffix), and checked against one pattern
whenever they come back (from a row): a user string never names an object, and a local key can never
point outside the root, even through a symlink (the resolved path is checked).
"""

from __future__ import annotations

import os
import re
import secrets
import shutil
import tempfile
import threading
from collections.abc import Iterable
from pathlib import Path
from typing import Any, Protocol

from django.conf import settings
from django.core.exceptions import ImproperlyConfigured

from webapp.core.errors import ApplicationError

KEY_PATTERN = re.compile(r"run-(?P<run>[0-9]{1,19})/step-[0-9]{1,19}-[0-9a-f]{16}\.z")
PREFIX_PATTERN = re.compile(r"(run-[0-9]{1,19}/)?")
S3_DELETE_BATCH = 1000  # DeleteObjects takes at most 1,000 keys a call


class TokenDataMissing(ApplicationError):
    """A rollout's row names an object the token store does not have (deleted by hand, or another store is
    configured than the one it was written to). Answered as 410."""

    status_code = 410


class TokenStore(Protocol):
    """The few operations rollouts need; keys come from ``step_object_key`` (``run-<id>/step-<n>-<hex>.z``)."""

    def put(self, key: str, data: bytes) -> None:
        """Write a whole object (replacing one of the same key: never happens, keys are random)."""

    def read_range(self, key: str, offset: int, size: int) -> bytes:
        """``size`` bytes from ``offset``; TokenDataMissing if the object (or the range) is not there."""

    def delete(self, keys: Iterable[str]) -> None:
        """Delete these objects; a missing one is not an error."""

    def delete_prefix(self, prefix: str) -> None:
        """Delete every object under ``run_prefix(run_id)``."""

    def total_bytes(self, prefix: str = "") -> int:
        """Bytes held under ``prefix`` (``run_prefix(run_id)``, or "" for the whole store)."""


def _natural(name: str, value: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ValueError(f"{name} must be a non-negative integer, got {value!r}")
    return value


def run_prefix(run_id: int) -> str:
    return f"run-{_natural('run_id', run_id)}/"


def step_object_key(run_id: int, step: int) -> str:
    """A fresh key for one write of one step: a resent batch or a re-recorded step gets its own object, so
    rows still pointing at the previous one stay readable until their transaction replaces them."""
    return f"{run_prefix(run_id)}step-{_natural('step', step)}-{secrets.token_hex(8)}.z"


def checked_key(key: str) -> str:
    if not isinstance(key, str) or KEY_PATTERN.fullmatch(key) is None:
        raise ValueError(f"not a token store key: {key!r} (keys look like run-12/step-3-0123456789abcdef.z)")
    return key


def checked_prefix(prefix: str) -> str:
    if not isinstance(prefix, str) or PREFIX_PATTERN.fullmatch(prefix) is None:
        raise ValueError(f"not a token store prefix: {prefix!r} (use run_prefix(run_id), or '' for all)")
    return prefix


def key_run_id(key: str) -> int:
    match = KEY_PATTERN.fullmatch(checked_key(key))
    assert match is not None
    return int(match["run"])


# --- the local filesystem ----------------------------------------------------------------------------


class LocalTokenStore:
    """Objects as files under ``root`` (``run-<id>/step-<n>-<hex>.z``), written to a temporary file and
    renamed into place, so a reader never sees half an object."""

    def __init__(self, root: Path) -> None:
        self.root = Path(root)

    def _path(self, relative: str) -> Path:
        root = self.root.resolve()
        path = (root / relative).resolve()
        if path != root and not path.is_relative_to(root):
            raise ValueError(f"token store key {relative!r} resolves outside the store's root {root}")
        return path

    def put(self, key: str, data: bytes) -> None:
        path = self._path(checked_key(key))
        path.parent.mkdir(parents=True, exist_ok=True)
        self._path(checked_key(key))  # again: the folder just made may be a symlink planted meanwhile
        fd, temporary = tempfile.mkstemp(dir=path.parent, prefix=".part-")
        try:
            with os.fdopen(fd, "wb") as out:
                out.write(data)
                out.flush()
                os.fsync(out.fileno())  # the row that names it commits next: the bytes must be on disk first
            os.replace(temporary, path)
        except BaseException:
            Path(temporary).unlink(missing_ok=True)
            raise

    def read_range(self, key: str, offset: int, size: int) -> bytes:
        path = self._path(checked_key(key))
        try:
            with open(path, "rb") as src:
                src.seek(_natural("offset", offset))
                data = src.read(_natural("size", size))
        except FileNotFoundError:
            raise TokenDataMissing(_missing_message(key, f"no file {path}")) from None
        if len(data) != size:
            raise TokenDataMissing(_missing_message(key, f"{path} is shorter than byte {offset + size}"))
        return data

    def delete(self, keys: Iterable[str]) -> None:
        for key in keys:
            self._path(checked_key(key)).unlink(missing_ok=True)

    def delete_prefix(self, prefix: str) -> None:
        if checked_prefix(prefix) == "":
            raise ValueError("delete_prefix needs a run's prefix: the whole store is never deleted at once")
        shutil.rmtree(self._path(prefix), ignore_errors=True)

    def total_bytes(self, prefix: str = "") -> int:
        top = self._path(checked_prefix(prefix))
        if not top.is_dir():
            return 0
        return sum(entry.stat().st_size for entry in top.rglob("*") if entry.is_file())


# --- S3-compatible object stores -------------------------------------------------------------------


class S3TokenStore:
    """Objects in ``bucket`` under ``prefix``; the bucket is created on the first write if it does not
    exist (a fresh MinIO), and otherwise must already be there with read/write/list/delete allowed."""

    def __init__(
        self, bucket: str, prefix: str = "", endpoint_url: str | None = None, client: Any = None
    ) -> None:
        self.bucket = bucket
        self.prefix = prefix.strip("/") + "/" if prefix.strip("/") else ""
        self.endpoint_url = endpoint_url
        self._client = client

    @property
    def client(self) -> Any:
        if self._client is None:
            import boto3
            from botocore.config import Config

            config = Config(
                retries={"max_attempts": 5, "mode": "standard"}, connect_timeout=10, read_timeout=60
            )
            # A session of its own: boto3's default session is not thread-safe, a client is.
            self._client = boto3.session.Session().client("s3", endpoint_url=self.endpoint_url, config=config)
        return self._client

    def put(self, key: str, data: bytes) -> None:
        from botocore.exceptions import ClientError

        name = self.prefix + checked_key(key)
        try:
            self.client.put_object(Bucket=self.bucket, Key=name, Body=data)
        except ClientError as err:
            if _error_code(err) != "NoSuchBucket":
                raise
            self.client.create_bucket(Bucket=self.bucket)
            self.client.put_object(Bucket=self.bucket, Key=name, Body=data)

    def read_range(self, key: str, offset: int, size: int) -> bytes:
        from botocore.exceptions import ClientError

        if _natural("size", size) == 0:
            return b""
        first = _natural("offset", offset)
        try:
            answer = self.client.get_object(
                Bucket=self.bucket,
                Key=self.prefix + checked_key(key),
                Range=f"bytes={first}-{first + size - 1}",
            )
        except ClientError as err:
            if _error_code(err) in ("NoSuchKey", "NoSuchBucket", "404", "InvalidRange"):
                raise TokenDataMissing(
                    _missing_message(key, f"s3://{self.bucket}/{self.prefix}{key}: {_error_code(err)}")
                ) from None
            raise
        data: bytes = answer["Body"].read()
        if len(data) != size:
            raise TokenDataMissing(_missing_message(key, f"the object is shorter than byte {offset + size}"))
        return data

    def delete(self, keys: Iterable[str]) -> None:
        names = [self.prefix + checked_key(key) for key in keys]
        for start in range(0, len(names), S3_DELETE_BATCH):
            batch = [{"Key": name} for name in names[start : start + S3_DELETE_BATCH]]
            self.client.delete_objects(Bucket=self.bucket, Delete={"Objects": batch, "Quiet": True})

    def delete_prefix(self, prefix: str) -> None:
        if checked_prefix(prefix) == "":
            raise ValueError("delete_prefix needs a run's prefix: the whole store is never deleted at once")
        names = [item["Key"] for item in self._listed(prefix)]
        for start in range(0, len(names), S3_DELETE_BATCH):
            batch = [{"Key": name} for name in names[start : start + S3_DELETE_BATCH]]
            self.client.delete_objects(Bucket=self.bucket, Delete={"Objects": batch, "Quiet": True})

    def total_bytes(self, prefix: str = "") -> int:
        return sum(int(item["Size"]) for item in self._listed(checked_prefix(prefix)))

    def _listed(self, prefix: str) -> list[dict[str, Any]]:
        from botocore.exceptions import ClientError

        pages = self.client.get_paginator("list_objects_v2").paginate(
            Bucket=self.bucket, Prefix=self.prefix + prefix
        )
        try:
            return [item for page in pages for item in page.get("Contents", [])]
        except ClientError as err:
            if _error_code(err) == "NoSuchBucket":  # nothing was ever written
                return []
            raise


def _error_code(err: Any) -> str:
    return str(err.response.get("Error", {}).get("Code", ""))


def _missing_message(key: str, why: str) -> str:
    return (
        f"The per-token data of this rollout is missing from the token store ({why}). Check that "
        "RLVR_TOKEN_STORE (and RLVR_S3_ENDPOINT_URL) are the same on the web server and on the workers."
    )


# --- the configured store ----------------------------------------------------------------------------


def store_from_setting(value: str, endpoint_url: str | None = None) -> TokenStore:
    """``/abs/folder`` -> LocalTokenStore; ``s3://bucket[/prefix]`` -> S3TokenStore."""
    if value.startswith("s3://"):
        bucket, _, prefix = value.removeprefix("s3://").partition("/")
        if not bucket:
            raise ImproperlyConfigured(f"RLVR_TOKEN_STORE={value!r} names no bucket: use s3://bucket/prefix")
        return S3TokenStore(bucket, prefix, endpoint_url or None)
    if "://" in value or not value.startswith("/"):
        raise ImproperlyConfigured(
            f"RLVR_TOKEN_STORE={value!r} is neither an absolute folder nor s3://bucket/prefix"
        )
    return LocalTokenStore(Path(value))


_stores: dict[tuple[str, str], TokenStore] = {}
_stores_lock = threading.Lock()


def token_store() -> TokenStore:
    """The store ``settings.RLVR_TOKEN_STORE`` names, one per setting value (tests change the setting)."""
    setting = (str(settings.RLVR_TOKEN_STORE), str(settings.RLVR_S3_ENDPOINT_URL or ""))
    with _stores_lock:
        if setting not in _stores:
            _stores[setting] = store_from_setting(*setting)
        return _stores[setting]
