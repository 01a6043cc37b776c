"""Turn arbitrary values into plain JSON types: ``Sample.meta`` and verifier details.

Both travel into checkpoints, rollout records and the webapp's JSON columns, so it must survive
``json.dumps``: tuples become lists, dates ISO strings, numpy/arrow scalars Python numbers, and anything
else its ``str``. Non-finite floats become strings because PostgreSQL's jsonb refuses NaN and Infinity.
"""

from __future__ import annotations

import base64
import datetime as dt
import math
from collections.abc import Mapping
from typing import Any


def to_jsonable(value: Any, depth: int = 0) -> Any:
    """A copy of ``value`` built only from dict (str keys), list, str, int, float, bool and None.

    Nesting deeper than 20 levels (or a cycle) is cut to a short string.
    """
    if value is None or isinstance(value, str | bool | int):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else str(value)
    if depth > 20:
        return str(value)[:300]
    if isinstance(value, Mapping):
        return {str(k): to_jsonable(v, depth + 1) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [to_jsonable(v, depth + 1) for v in value]
    if isinstance(value, set | frozenset):
        return sorted((to_jsonable(v, depth + 1) for v in value), key=repr)
    if isinstance(value, dt.date | dt.time):
        return value.isoformat()
    if isinstance(value, bytes):
        return base64.b64encode(value).decode("ascii")
    item = getattr(value, "item", None)  # numpy scalars (and 1-element arrays) know their Python value
    if callable(item):
        try:
            return to_jsonable(item(), depth + 1)
        except (TypeError, ValueError):
            pass
    tolist = getattr(value, "tolist", None)  # numpy arrays
    if callable(tolist):
        return to_jsonable(tolist(), depth + 1)
    return str(value)[:300]
