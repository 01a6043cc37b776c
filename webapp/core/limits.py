"""Request size and content limits, answered in the API's one error shape (or a short page for browsers).

Django refuses an oversized body (``RequestDataTooBig``), too many form fields (``TooManyFieldsSent``) or
files (``TooManyFilesSent``) by raising a ``SuspiciousOperation``, which it answers with a bare HTML 400.
``RequestLimitsMiddleware`` answers them instead, and refuses a body whose ``Content-Length`` is over the
limit before a byte of it is read: ``RLVR_MAX_BODY_KB`` for every request, except the few upload endpoints
(``UPLOAD_VIEWS``), whose multipart files Django streams to disk, which get ``RLVR_MAX_UPLOAD_MB``. It also
refuses NUL characters in query parameters and url-encoded form fields, which PostgreSQL cannot store.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django.conf import settings
from django.core.exceptions import RequestDataTooBig, TooManyFieldsSent, TooManyFilesSent
from django.http import HttpRequest, HttpResponse, JsonResponse, QueryDict
from django.urls import Resolver404, resolve
from django.utils.html import escape

from trainer.bounds import string_problem
from webapp.core.errors import ApplicationError

# Views that take a data file: the body may be as large as RLVR_MAX_UPLOAD_MB (the file goes to disk).
UPLOAD_VIEWS = frozenset({"dataset-list", "dataset-preview", "benchmark-file", "benchmarks:list"})
# Views whose JSON bodies may reach RLVR_MAX_INGEST_MB (their parser holds them to it: webapp/ingest/parsers.py).
INGEST_VIEWS = frozenset({"ingest-batches"})


class RequestTooLarge(ApplicationError):
    """A body, a form or an upload over its limit. Answered as 413."""

    status_code = 413


class UrlTooLong(ApplicationError):
    """A query string over MAX_QUERY_STRING_BYTES. Answered as 414."""

    status_code = 414


# daphne's HTTP server (Twisted) drops a request line plus headers past 16 KB without an answer; below that,
# this bound answers in the error shape, and keeps a search term within what a database can match (SQLite
# refuses LIKE patterns past 50,000 bytes). The longest query the pages build (40 metric keys) is about 8 KB.
MAX_QUERY_STRING_BYTES = 12 * 1024


def ingest_limit_bytes() -> int:
    return int(settings.RLVR_MAX_INGEST_MB) * 1024 * 1024


def body_limit_bytes() -> int:
    return int(settings.RLVR_MAX_BODY_KB) * 1024


def upload_limit_bytes() -> int:
    return int(settings.RLVR_MAX_UPLOAD_MB) * 1024 * 1024


def _mb(size: int) -> str:
    return f"{size / 2**20:.1f} MB"


def body_too_large(size: int | None, limit: int, setting: str) -> RequestTooLarge:
    said = f"Request body is {_mb(size)}" if size is not None else "Request body is too large"
    return RequestTooLarge(
        f"{said}; the limit is {_mb(limit)} ({setting}). Send a smaller body, upload data as a file to the "
        "datasets endpoint, or raise the limit on the server.",
        {"limit_bytes": limit, "size_bytes": size, "setting": setting},
    )


def refusal_for(exc: BaseException) -> ApplicationError | None:
    """The error a client should see for Django's own request-limit exceptions, or None for other errors."""
    if isinstance(exc, RequestDataTooBig):
        return body_too_large(None, body_limit_bytes(), "RLVR_MAX_BODY_KB")
    if isinstance(exc, TooManyFieldsSent):
        limit = settings.DATA_UPLOAD_MAX_NUMBER_FIELDS
        return RequestTooLarge(
            f"The form has more than {limit} fields (DATA_UPLOAD_MAX_NUMBER_FIELDS): send fewer fields, or "
            "one JSON body.",
            {"limit_fields": limit},
        )
    if isinstance(exc, TooManyFilesSent):
        limit = settings.DATA_UPLOAD_MAX_NUMBER_FILES
        return RequestTooLarge(
            f"The form has more than {limit} files (DATA_UPLOAD_MAX_NUMBER_FILES): upload one file at a time.",
            {"limit_files": limit},
        )
    return None


def nul_in_params(params: QueryDict, where: str) -> ApplicationError | None:
    for key, values in params.lists():
        for text in [key, *values]:
            problem = string_problem(text)
            if problem:
                field = key if string_problem(key) is None else "(a parameter name)"
                return ApplicationError(f"{where} {field}: {problem}", {"fields": {field: [problem]}})
    return None


class RequestLimitsMiddleware:
    """Refuse oversized bodies and NUL characters early; turn Django's limit errors into readable answers."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        refusal = self._refusal(request)
        if refusal is not None:
            return refusal_response(request, refusal)
        return self.get_response(request)

    def process_exception(self, request: HttpRequest, exception: Exception) -> HttpResponse | None:
        refusal = refusal_for(exception)
        return None if refusal is None else refusal_response(request, refusal)

    def _refusal(self, request: HttpRequest) -> ApplicationError | None:
        try:
            size = int(request.META.get("CONTENT_LENGTH") or 0)
        except ValueError:
            size = 0
        if size > body_limit_bytes():
            view = _view_name(request)
            upload = view in UPLOAD_VIEWS and request.content_type == "multipart/form-data"
            limit, setting = (
                (upload_limit_bytes(), "RLVR_MAX_UPLOAD_MB")
                if upload
                else (body_limit_bytes(), "RLVR_MAX_BODY_KB")
            )
            if view in INGEST_VIEWS:
                limit, setting = ingest_limit_bytes(), "RLVR_MAX_INGEST_MB"
            if size > limit:
                return body_too_large(size, limit, setting)
        query_bytes = len(request.META.get("QUERY_STRING") or "")
        if query_bytes > MAX_QUERY_STRING_BYTES:
            return UrlTooLong(
                f"The query string is {query_bytes / 1024:.0f} KB; the limit is {MAX_QUERY_STRING_BYTES // 1024} KB. "
                "Ask for fewer values at once (fewer metric keys, a shorter search).",
                {"limit_bytes": MAX_QUERY_STRING_BYTES, "size_bytes": query_bytes},
            )
        refusal = nul_in_params(request.GET, "Query parameter")
        if (
            refusal is None
            and request.method == "POST"
            and request.content_type == "application/x-www-form-urlencoded"
        ):
            try:
                refusal = nul_in_params(request.POST, "Form field")
            except (RequestDataTooBig, TooManyFieldsSent) as err:
                refusal = refusal_for(err)
        return refusal


def _view_name(request: HttpRequest) -> str | None:
    try:
        return resolve(request.path_info).view_name
    except Resolver404:
        return None


def refusal_response(request: HttpRequest, refusal: ApplicationError) -> HttpResponse:
    """JSON ``{message, extra}`` for /api/ paths; a short page for a browser."""
    if request.path_info.startswith(("/api/", "/tinker/")):  # the Tinker API (webapp/training_api) too
        return JsonResponse({"message": refusal.message, "extra": refusal.extra}, status=refusal.status_code)
    body: dict[str, Any] = {"title": "Request refused", "message": escape(refusal.message)}
    html = (
        "<!doctype html><html><head><meta charset='utf-8'><title>{title}</title></head>"
        "<body><h1>{title}</h1><p>{message}</p></body></html>"
    ).format(**body)
    return HttpResponse(html, status=refusal.status_code, content_type="text/html; charset=utf-8")
