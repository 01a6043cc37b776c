"""``StrictJSONField``: the JSON field of every API serializer (tests/webapp/api/test_json_fields_are_strict.py).

A JSON body reaches a field already parsed by ``StrictJSONParser``. A form-encoded body does not: REST
framework's own ``JSONField`` reads the field's text with ``json.loads``, which recurses without a bound
(a deep array is a RecursionError), stops at 4,300-digit integers with a bare ValueError, and turns the text
``null`` into None after the null check has passed (``config=null`` then fails an assertion deeper down).
This field reads that text with ``trainer.bounds.strict_json_loads`` and applies the null check to the
result, so a form field gets the same answers as the same value in a JSON body.
"""

from __future__ import annotations

import json
from typing import Any

from rest_framework import serializers

from trainer.bounds import UnsafeInput, strict_json_loads


class StrictJSONField(serializers.JSONField):
    def to_internal_value(self, data: Any) -> Any:
        if not (self.binary or getattr(data, "is_json_string", False)):
            return super().to_internal_value(data)
        try:
            value = strict_json_loads(data)
        except UnsafeInput as err:
            raise serializers.ValidationError(str(err)) from None
        except (UnicodeDecodeError, json.JSONDecodeError):
            self.fail("invalid")
        if value is None and not self.allow_null:
            self.fail("null")
        return value
