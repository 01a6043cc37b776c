"""The ingest endpoint's body parser: JSON, optionally gzip-compressed, up to ``RLVR_MAX_INGEST_MB``.

Ingest batches carry per-token arrays, so they are larger than the API's other bodies
(``RLVR_MAX_BODY_KB``); webapp/core/limits.py lets this one view's ``Content-Length`` reach the
ingest limit. The compressed body and the decompressed text are each held to the limit (a small gzip
body may inflate a thousandfold), then parsed by the same strict reader as every other body.

Not a ``JSONParser`` subclass, on purpose: DRF hands a ``JSONParser`` the whole ``request.body``, and Django
refuses a ``request.body`` over ``DATA_UPLOAD_MAX_MEMORY_SIZE`` (``RLVR_MAX_BODY_KB``, 2.5 MB), so every
batch over 2.5 MB was answered 413 whatever the ingest limit said. Any other parser gets the request's
stream, which this one reads itself, in chunks, never past the ingest limit.
"""

from __future__ import annotations

import json
import zlib
from collections.abc import Mapping
from typing import IO, Any

from rest_framework.exceptions import ParseError
from rest_framework.parsers import BaseParser

from trainer.bounds import UnsafeInput, strict_json_loads
from webapp.api.parsers import _unsafe
from webapp.core.limits import RequestTooLarge, ingest_limit_bytes


def _too_large(limit: int, what: str) -> RequestTooLarge:
    return RequestTooLarge(
        f"The ingest batch is over {limit / 2**20:.0f} MB{' ' + what if what else ''} (RLVR_MAX_INGEST_MB): send fewer rollouts per "
        "batch (the client splits batches by itself), or raise the limit on the server.",
        {"limit_bytes": limit, "setting": "RLVR_MAX_INGEST_MB"},
    )


READ_CHUNK = 1 << 20


def read_bounded(stream: IO[bytes] | None, limit: int) -> bytes:
    """The body, read in chunks; ``RequestTooLarge`` as soon as it passes ``limit`` (a body sent without a
    ``Content-Length`` is not refused before it is read, so it is held to the limit here)."""
    if stream is None:
        return b""
    body = bytearray()
    while True:
        chunk = stream.read(min(READ_CHUNK, limit + 1 - len(body)))
        if not chunk:
            return bytes(body)
        body += chunk
        if len(body) > limit:
            raise _too_large(limit, "")


def gunzip_bounded(raw: bytes, limit: int) -> bytes:
    inflater = zlib.decompressobj(wbits=16 + zlib.MAX_WBITS)
    try:
        out = inflater.decompress(raw, limit + 1)
    except zlib.error as err:
        raise ParseError(f"The body says Content-Encoding: gzip but is not gzip data ({err}).") from None
    if len(out) > limit or inflater.unconsumed_tail:
        raise _too_large(limit, "once decompressed")
    return out


class IngestJSONParser(BaseParser):
    media_type = "application/json"

    def parse(
        self, stream: IO[Any], media_type: str | None = None, parser_context: Mapping[str, Any] | None = None
    ) -> Any:
        limit = ingest_limit_bytes()
        raw = read_bounded(stream, limit)
        request = (parser_context or {}).get("request")
        encoding_header = request.META.get("HTTP_CONTENT_ENCODING", "") if request is not None else ""
        if encoding_header.strip().lower() == "gzip":
            raw = gunzip_bounded(raw, limit)
        elif encoding_header.strip().lower() not in ("", "identity"):
            raise ParseError(f"Unsupported Content-Encoding {encoding_header!r}: send gzip or nothing.")
        try:
            return strict_json_loads(raw.decode("utf-8"))
        except UnsafeInput as err:
            raise _unsafe(err) from None
        except (UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise ParseError(f"JSON parse error - {exc}") from None
