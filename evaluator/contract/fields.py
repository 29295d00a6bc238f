"""The checks every untrusted value of the evaluator's output goes through (the report, its
`gpu_state` and its `profile`): each raises ReportError with where and what. Standard library
only."""
from __future__ import annotations

import math

MAX_TEXT = 4000


class ReportError(ValueError):
    """An untrusted report does not follow the schema."""


def _fail(where: str, what: str):
    raise ReportError(f"{where}: {what}")


def _text(value, where, limit=MAX_TEXT, nullable=False):
    if value is None and nullable:
        return None
    if not isinstance(value, str):
        _fail(where, "must be a string")
    if len(value) > limit:
        _fail(where, f"longer than {limit} characters")
    return value


def _number(value, where, nullable=True, high=1e12):
    if value is None and nullable:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        _fail(where, "must be a number")
    value = float(value)
    if not math.isfinite(value) or value < 0 or value > high:
        _fail(where, "must be finite, non-negative and sane")
    return value


def _list(value, where, limit):
    if not isinstance(value, list):
        _fail(where, "must be a list")
    if len(value) > limit:
        _fail(where, f"more than {limit} items")
    return value


def _dict(value, where, limit=64):
    if not isinstance(value, dict):
        _fail(where, "must be an object")
    if len(value) > limit:
        _fail(where, f"more than {limit} keys")
    for key in value:
        _text(key, f"{where} key", 64)
    return value


def _shape(value, where):
    _dict(value, where, 16)
    out = {}
    for key, dim in value.items():
        if isinstance(dim, bool) or not isinstance(dim, int) or not 0 <= dim <= 1 << 40:
            _fail(f"{where}.{key}", "must be a non-negative integer")
        out[key] = dim
    return out


def _flat(value, where, limit=32):
    """An object of short strings / numbers / booleans / nulls (versions, isolation)."""
    _dict(value, where, limit)
    out = {}
    for key, item in value.items():
        if item is None or isinstance(item, bool):
            out[key] = item
        elif isinstance(item, (int, float)):
            if not math.isfinite(float(item)):
                _fail(f"{where}.{key}", "must be finite")
            out[key] = item
        elif isinstance(item, str):
            out[key] = _text(item, f"{where}.{key}", 256)
        else:
            _fail(f"{where}.{key}", "must be a string, number, boolean or null")
    return out
