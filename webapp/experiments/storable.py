"""Make trainer output storable in both databases and sendable as JSON.

PostgreSQL refuses NUL characters in text and JSON, and NaN/Infinity inside JSON; SQLite stores a NaN
float as NULL. A trainer can produce all of these (a byte-level token that decodes to NUL, a KL of NaN),
so values are cleaned once, here, on the way in: NaN and infinities become None (null), NUL becomes
U+FFFD. Packed per-token arrays are binary and keep their NaNs as they are.
"""

from __future__ import annotations

import math
from typing import Any

REPLACEMENT = "\ufffd"


def finite_or_none(value: float | None) -> float | None:
    if value is None:
        return None
    number = float(value)
    return number if math.isfinite(number) else None


def clean_text(text: str) -> str:
    return text.replace("\x00", REPLACEMENT) if "\x00" in text else text


def clean_json(value: Any) -> Any:
    """A copy of ``value`` with non-finite floats as None and NUL characters replaced, recursively."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, str):
        return clean_text(value)
    if isinstance(value, dict):
        return {clean_text(str(k)): clean_json(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [clean_json(v) for v in value]
    return value
