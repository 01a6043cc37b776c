"""The ingest endpoint's body parser: JSON, optionally gzip-compressed, up to ``RLVR_MAX_INGEST_MB``.

Ingest batches carry per-token arrays, so they are larger than the API's other bodies
(``RLVR_MAX_BODY_KB``); webapp/core/limits.py lets this one view's ``Content-Length`` reach the
ingest limit. The compressed body and the decompressed text are each held to the limit (a small gzip
body may inflate a thousandfold), then parsed by the same strict reader as every other body.
"""

from __future__ import annotations

import json
import zlib
from collections.abc import Mapping
from typing import IO, Any

from rest_framework.exceptions import ParseError

from trainer.bounds import UnsafeInput, strict_json_loads
from webapp.api.parsers import StrictJSONParser, _unsafe
from webapp.core.limits import RequestTooLarge, ingest_limit_bytes


def _too_large(limit: int, what: str) -> RequestTooLarge:
    return RequestTooLarge(
        f"The ingest batch is over {limit / 2**20:.0f} MB {what} (RLVR_MAX_INGEST_MB): send fewer rollouts per "
        "batch (the client splits batches by itself), or raise the limit on the server.",
        {"limit_bytes": limit, "setting": "RLVR_MAX_INGEST_MB"},
    )


def gunzip_bounded(raw: bytes, limit: int) -> bytes:
    inflater = zlib.decompressobj(wbits=16 + zlib.MAX_WBITS)
    try:
        out = inflater.decompress(raw, limit + 1)
    except zlib.error as err:
        raise ParseError(f"The body says Content-Encoding: gzip but is not gzip data ({err}).") from None
    if len(out) > limit or inflater.unconsumed_tail:
        raise _too_large(limit, "once decompressed")
    return out


class IngestJSONParser(StrictJSONParser):
    def parse(self, stream: IO[Any], media_type: str | None = None, parser_context: Mapping[str, Any] | None = None) -> Any:
        limit = ingest_limit_bytes()
        raw = stream.read(limit + 1) if stream is not None else b""
        if len(raw) > limit:
            raise _too_large(limit, "")
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
