import datetime as dt
import json
import math

from trainer.jsonable import to_jsonable


def test_tuples_and_sets_become_lists():
    assert to_jsonable({"range": (1, 4), "ops": {"+"}}) == {"range": [1, 4], "ops": ["+"]}


def test_dates_become_iso_strings():
    assert to_jsonable(dt.date(2025, 1, 2)) == "2025-01-02"


def test_non_finite_floats_become_strings():
    assert to_jsonable([math.inf, 1.5]) == ["inf", 1.5]


def test_keys_become_strings_and_the_result_dumps():
    value = to_jsonable({1: object.__new__(object), "b": b"\x00"})
    assert set(value) == {"1", "b"}
    json.dumps(value, allow_nan=False)
