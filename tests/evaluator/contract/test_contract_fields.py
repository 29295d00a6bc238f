"""evaluator/contract/fields.py: every check refuses a wrong value with ReportError naming where it
was found, and hands back a normalised value otherwise."""
import math

import pytest

from evaluator.contract import fields
from evaluator.contract.fields import ReportError


def refused(fn, *args, **kw) -> str:
    with pytest.raises(ReportError) as e:
        fn(*args, **kw)
    return str(e.value)


def test_text_accepts_strings_within_the_limit_and_names_the_place_otherwise():
    assert fields._text("abc", "report.x") == "abc"
    assert fields._text(None, "report.x", nullable=True) is None
    assert refused(fields._text, None, "report.x") == "report.x: must be a string"
    assert refused(fields._text, 3, "report.name") == "report.name: must be a string"
    assert refused(fields._text, "x" * 11, "report.msg", 10) == "report.msg: longer than 10 characters"
    assert fields._text("x" * fields.MAX_TEXT, "w") == "x" * fields.MAX_TEXT
    assert "longer than" in refused(fields._text, "x" * (fields.MAX_TEXT + 1), "w")


def test_number_is_finite_non_negative_and_not_a_boolean():
    assert fields._number(3, "r.ms") == 3.0 and isinstance(fields._number(3, "r.ms"), float)
    assert fields._number(None, "r.ms") is None
    assert refused(fields._number, None, "r.ms", nullable=False) == "r.ms: must be a number"
    assert refused(fields._number, True, "r.ms") == "r.ms: must be a number"
    assert refused(fields._number, "1", "r.ms") == "r.ms: must be a number"
    for bad in (-1, math.inf, math.nan, 2e12):
        assert refused(fields._number, bad, "r.speedup") == "r.speedup: must be finite, non-negative and sane"
    assert refused(fields._number, 11, "r.t", high=10).startswith("r.t:")


def test_list_and_dict_bound_their_size_and_dict_keys_must_be_short_strings():
    assert fields._list([1, 2], "r.tests", 2) == [1, 2]
    assert refused(fields._list, (1,), "r.tests", 5) == "r.tests: must be a list"
    assert refused(fields._list, [0] * 3, "r.tests", 2) == "r.tests: more than 2 items"
    assert fields._dict({"a": 1}, "r.v") == {"a": 1}
    assert refused(fields._dict, [], "r.v") == "r.v: must be an object"
    assert refused(fields._dict, {str(i): i for i in range(3)}, "r.v", 2) == "r.v: more than 2 keys"
    assert refused(fields._dict, {1: "x"}, "r.v") == "r.v key: must be a string"
    assert refused(fields._dict, {"k" * 65: 1}, "r.v") == "r.v key: longer than 64 characters"


def test_shape_takes_non_negative_integers_only():
    assert fields._shape({"M": 4, "N": 0}, "tests[0].shape") == {"M": 4, "N": 0}
    assert refused(fields._shape, {"M": -1}, "tests[0].shape") == "tests[0].shape.M: must be a non-negative integer"
    assert refused(fields._shape, {"M": True}, "s") == "s.M: must be a non-negative integer"
    assert refused(fields._shape, {"M": 2.0}, "s") == "s.M: must be a non-negative integer"
    assert refused(fields._shape, {"M": (1 << 40) + 1}, "s") == "s.M: must be a non-negative integer"
    assert "more than 16 keys" in refused(fields._shape, {f"d{i}": 1 for i in range(17)}, "s")


def test_flat_keeps_scalars_and_refuses_nested_or_non_finite_values():
    flat = {"torch": "2.5", "cuda": None, "root": True, "uid": 65534, "ratio": 0.5}
    assert fields._flat(flat, "versions") == flat
    assert refused(fields._flat, {"x": [1]}, "isolation") == "isolation.x: must be a string, number, boolean or null"
    assert refused(fields._flat, {"x": {"y": 1}}, "isolation") == "isolation.x: must be a string, number, boolean or null"
    assert refused(fields._flat, {"x": math.nan}, "versions") == "versions.x: must be finite"
    assert refused(fields._flat, {"x": "v" * 257}, "versions") == "versions.x: longer than 256 characters"


def test_report_error_is_a_value_error():
    assert issubclass(ReportError, ValueError)
