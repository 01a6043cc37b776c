"""Request parsers for every API view: bodies with NUL, lone surrogates, NaN, overflowing floats, integers of
more than 300 digits or deep nesting are a 400. A form field holding JSON is read by the same reader
(``webapp.api.fields.StrictJSONField``).

``StrictJSONParser`` reads at most ``RLVR_MAX_BODY_KB`` (413 past it, even without a Content-Length) and
parses with ``trainer.bounds.strict_json_loads``: one linear pass measures the nesting first, so a
100,000-deep array is refused instead of exhausting the stack, and ``NaN`` / ``Infinity`` literals are
refused (they are not JSON, and PostgreSQL's jsonb cannot hold them). The form and multipart parsers
check every field name and value the same way. Each refusal names the field path where it is known.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import IO, Any

from django.conf import settings
from django.http import QueryDict
from rest_framework import parsers
from rest_framework.exceptions import ParseError

from trainer.bounds import UnsafeInput, strict_json_loads, string_problem
from webapp.core.errors import ApplicationError
from webapp.core.limits import body_limit_bytes, body_too_large


def _unsafe(err: UnsafeInput) -> ApplicationError:
    field = err.path or "(body)"
    message = f"{err.path}: {err.problem}" if err.path else err.problem
    return ApplicationError(message, {"fields": {field: [err.problem]}})


def _encoding(parser_context: Mapping[str, Any] | None) -> str:
    """The body's charset; only text encodings (as DRF's own check: a bz2 'charset' would decompress)."""
    encoding = str((parser_context or {}).get("encoding") or settings.DEFAULT_CHARSET)
    try:
        "".encode(encoding)
    except (LookupError, UnicodeError):
        raise ParseError(f'Unsupported charset "{encoding}" in request Content-Type header.') from None
    return encoding


class StrictJSONParser(parsers.JSONParser):
    def parse(
        self, stream: IO[Any], media_type: str | None = None, parser_context: Mapping[str, Any] | None = None
    ) -> Any:
        limit = body_limit_bytes()
        raw = stream.read(limit + 1) if stream is not None else b""
        if len(raw) > limit:
            raise body_too_large(None, limit, "RLVR_MAX_BODY_KB")
        encoding = _encoding(parser_context)
        try:
            return strict_json_loads(raw.decode(encoding))
        except UnsafeInput as err:
            raise _unsafe(err) from None
        except (UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise ParseError(f"JSON parse error - {exc}") from None


def check_fields(data: QueryDict) -> None:
    """ApplicationError for a NUL or lone surrogate in any form field name or value."""
    for key, values in data.lists():
        for value in [key, *values]:
            if isinstance(value, str) and string_problem(value):
                field = key if not string_problem(key) else "(a field name)"
                raise _unsafe(UnsafeInput(str(string_problem(value)), field))


class StrictFormParser(parsers.FormParser):
    def parse(
        self, stream: IO[Any], media_type: str | None = None, parser_context: Mapping[str, Any] | None = None
    ) -> Any:
        data = super().parse(stream, media_type, parser_context)
        check_fields(data)
        return data


class StrictMultiPartParser(parsers.MultiPartParser):
    def parse(
        self, stream: IO[Any], media_type: str | None = None, parser_context: Mapping[str, Any] | None = None
    ) -> parsers.DataAndFiles:
        result = super().parse(stream, media_type, parser_context)
        check_fields(result.data)
        for key, upload in result.files.items():
            problem = string_problem(str(getattr(upload, "name", "") or ""))
            if problem:
                raise _unsafe(UnsafeInput(f"file name {problem}", key))
        return result
