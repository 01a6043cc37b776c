"""Every writable JSON field of an API input serializer is ``StrictJSONField``: REST framework's own reads a
form-encoded value with plain ``json.loads`` (unbounded nesting, bare ValueErrors, a null that passes).
Output serializers (``...Out``, the styleguide's naming) only render, so their fields may stay as they are."""

from __future__ import annotations

import importlib
from typing import Any

from django.conf import settings
from rest_framework import serializers

from webapp.api.fields import StrictJSONField


def _subclasses(cls: type[Any]) -> set[type[Any]]:
    found = set(cls.__subclasses__())
    for child in list(found):
        found |= _subclasses(child)
    return found


def test_no_api_serializer_reads_json_with_rest_framework_s_own_field() -> None:
    importlib.import_module(settings.ROOT_URLCONF)  # imports every API module, so every serializer
    loose = []
    for cls in _subclasses(serializers.Serializer):
        if not cls.__module__.startswith("webapp.") or cls.__name__.endswith("Out"):
            continue
        try:
            fields = cls().fields
        except Exception:  # a serializer that needs context to build its fields
            fields = getattr(cls, "_declared_fields", {})
        for name, field in fields.items():
            if (
                isinstance(field, serializers.JSONField)
                and not field.read_only
                and not isinstance(field, StrictJSONField)
            ):
                loose.append(f"{cls.__module__}.{cls.__name__}.{name}")
    assert not loose, f"use webapp.api.fields.StrictJSONField for: {loose}"
