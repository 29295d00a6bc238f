"""A report's `gpu_state`: the GPU's readings before and after the timing phase (judge/gpustate.py
takes them through NVML), their fields, and their validation for the sandbox and the site.
Standard library only."""
from __future__ import annotations

from evaluator.contract.fields import ReportError, _dict, _list, _number, _text

FIELDS = ("index", "uuid", "sm_mhz", "mem_mhz", "temp_c", "power_w", "power_limit_w", "reasons", "error")
MAX_REASONS = 16


def blank(**given) -> dict:
    out = dict.fromkeys(FIELDS)
    out.update(reasons=[], error="")
    out.update(given)
    return out


# ---- validation of an untrusted report's gpu_state ---------------------------------------------

def validate(state) -> dict | None:
    """A normalised copy of a report's `gpu_state` (null, or a reading before and after timing),
    or ReportError."""
    if state is None:
        return None
    _dict(state, "gpu_state", 2)
    if set(state) != {"before", "after"}:
        raise ReportError("gpu_state: must have exactly the keys before and after")
    return {when: _reading(state[when], f"gpu_state.{when}") for when in ("before", "after")}


def _reading(r, where: str) -> dict:
    _dict(r, where, len(FIELDS))
    if set(r) - set(FIELDS):
        raise ReportError(f"{where}: unknown keys {sorted(set(r) - set(FIELDS))}")
    out = blank()
    index = r.get("index")
    if index is not None and (isinstance(index, bool) or not isinstance(index, int) or not 0 <= index < 1024):
        raise ReportError(f"{where}.index: must be a small non-negative integer or null")
    out["index"] = index
    out["uuid"] = _text(r.get("uuid"), f"{where}.uuid", 96, nullable=True)
    for key, high in (("sm_mhz", 1e5), ("mem_mhz", 1e5), ("temp_c", 1000), ("power_w", 1e5),
                      ("power_limit_w", 1e5)):
        value = _number(r.get(key), f"{where}.{key}", high=high)
        out[key] = int(value) if isinstance(r.get(key), int) else value
    out["reasons"] = [_text(x, f"{where}.reasons[]", 32) for x in _list(r.get("reasons", []), f"{where}.reasons",
                                                                         MAX_REASONS)]
    out["error"] = _text(r.get("error", ""), f"{where}.error", 256)
    return out
