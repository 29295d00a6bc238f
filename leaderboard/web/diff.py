"""A unified diff of two sources as lines for a template (which escapes each one), with Python's
difflib: the standard library's diff is enough for code of at most 256 KiB, once its work is bounded.

difflib's matcher is quadratic in the worst case: two uploads within the 256 KiB limit with
52,000 short lines of a few hundred distinct values take from tens of seconds to minutes, and
4,000 lines a side of unique text changed every other line about one second. So the sizes are
checked before difflib runs: at most DIFF_MAX_SIDE_LINES lines a side and DIFF_MAX_LINE_PAIRS
lines of one times lines of the other (under half a second in the worst cases tried); beyond
that the pages say the pair is too large to diff here. difflib's own autojunk heuristic (on by
default in unified_diff) stays on. A diff is cached in Django's cache by the two submissions and
their sources' sha256: sources never change, so the work is done once per pair.
"""
from __future__ import annotations

import difflib
import hashlib

from django.core.cache import cache

DIFF_MAX_LINES = 2000  # of output: the diff is cut here
DIFF_MAX_SIDE_LINES = 4000
DIFF_MAX_LINE_PAIRS = 4_000_000
DIFF_CACHE_S = 24 * 3600


def too_large_to_diff(old_lines: int, new_lines: int) -> bool:
    return (max(old_lines, new_lines) > DIFF_MAX_SIDE_LINES
            or old_lines * new_lines > DIFF_MAX_LINE_PAIRS)


def diff_lines(old: str, new: str, old_name: str = "earlier", new_name: str = "this") -> list[dict] | None:
    """[{"kind": "meta" | "add" | "del" | "ctx", "text": line}], cut after DIFF_MAX_LINES lines;
    None when the two are too large to diff here (decided before difflib runs)."""
    old_lines, new_lines = old.splitlines(), new.splitlines()
    if too_large_to_diff(len(old_lines), len(new_lines)):
        return None
    lines = []
    for line in difflib.unified_diff(old_lines, new_lines, old_name, new_name, lineterm=""):
        kind = "meta" if line.startswith(("---", "+++", "@@")) else {"+": "add", "-": "del"}.get(line[:1], "ctx")
        lines.append({"kind": kind, "text": line})
        if len(lines) >= DIFF_MAX_LINES:
            lines.append({"kind": "meta", "text": "(diff cut here)"})
            break
    return lines


def submissions_diff(old, new, old_name: str, new_name: str) -> dict:
    """{"lines": diff_lines(...) or [], "too_large": bool, "old_lines": n, "new_lines": n} for two
    submissions, from the cache when this pair was diffed before."""
    ident = f"{old.pk}:{old.source_sha256}:{new.pk}:{new.source_sha256}:{old_name}:{new_name}"
    key = "diff:" + hashlib.sha256(ident.encode()).hexdigest()
    found = cache.get(key)
    if found is None:
        lines = diff_lines(old.source, new.source, old_name, new_name)
        found = {"lines": lines or [], "too_large": lines is None,
                 "old_lines": len(old.source.splitlines()), "new_lines": len(new.source.splitlines())}
        cache.set(key, found, DIFF_CACHE_S)
    return found
