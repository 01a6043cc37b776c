"""One error shape for the whole API (HackSoft styleguide): ``{"message": str, "extra": {...}}``.

Validation errors carry ``extra.fields``: a flat map from a dotted field path to its messages, e.g.
``{"config.training.learning_rate": ["Input should be greater than 0"]}``, so a client (the CLI, the
experiment form) can point at the field without walking nested structures.
"""

from __future__ import annotations

from typing import Any

from django.core.exceptions import PermissionDenied as DjangoPermissionDenied
from django.core.exceptions import ValidationError as DjangoValidationError
from django.http import Http404
from rest_framework import exceptions
from rest_framework.response import Response
from rest_framework.serializers import as_serializer_error
from rest_framework.views import exception_handler

from webapp.core.errors import ApplicationError
from webapp.core.limits import refusal_for

NON_FIELD = "non_field_errors"


def api_exception_handler(exc: Exception, context: dict[str, Any]) -> Response | None:
    exc = refusal_for(exc) or exc  # Django's oversized-body / too-many-fields errors: 413 in this shape
    if isinstance(exc, ApplicationError):
        return Response({"message": exc.message, "extra": exc.extra}, status=exc.status_code)
    if isinstance(exc, DjangoValidationError):
        exc = exceptions.ValidationError(as_serializer_error(exc))
    elif isinstance(exc, Http404):
        exc = exceptions.NotFound()
    elif isinstance(exc, DjangoPermissionDenied):
        exc = exceptions.PermissionDenied(str(exc) or None)

    response = exception_handler(exc, context)
    if response is None:  # not an API error: let Django log it and answer 500
        return None
    if isinstance(exc, exceptions.ValidationError):
        fields = flatten_errors(exc.detail)
        response.data = {"message": validation_message(fields), "extra": {"fields": fields}}
    else:
        detail = exc.detail if isinstance(exc, exceptions.APIException) else str(exc)
        response.data = {"message": str(detail), "extra": {}}
    return response


def flatten_errors(detail: Any, prefix: str = "") -> dict[str, list[str]]:
    """DRF's nested error structure -> ``{"a.b.0.c": ["message", ...]}``."""
    if isinstance(detail, dict):
        flat: dict[str, list[str]] = {}
        for key, value in detail.items():
            flat.update(flatten_errors(value, f"{prefix}.{key}" if prefix else str(key)))
        return flat
    if isinstance(detail, list):
        if all(not isinstance(item, dict | list) for item in detail):
            return {prefix or NON_FIELD: [str(item) for item in detail]} if detail else {}
        flat = {}
        for index, item in enumerate(detail):
            flat.update(flatten_errors(item, f"{prefix}.{index}" if prefix else str(index)))
        return flat
    return {prefix or NON_FIELD: [str(detail)]}


def validation_message(fields: dict[str, list[str]]) -> str:
    """A one-line summary naming the first wrong field, for clients that only print ``message``."""
    if not fields:
        return "Invalid input."
    path, messages = next(iter(fields.items()))
    first = messages[0] if path == NON_FIELD else f"{path}: {messages[0]}"
    more = len(fields) - 1
    return first if more == 0 else f"{first} (and {more} more field{'s' if more > 1 else ''})"
