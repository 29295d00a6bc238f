"""A unified diff of two sources as lines for a template (which escapes each one), with
Python's difflib: the standard library's diff is enough for code of at most 256 KiB."""
from __future__ import annotations

import difflib

DIFF_MAX_LINES = 2000


def diff_lines(old: str, new: str, old_name: str = "earlier", new_name: str = "this") -> list[dict]:
    """[{"kind": "meta" | "add" | "del" | "ctx", "text": line}], cut after DIFF_MAX_LINES lines."""
    lines = []
    for line in difflib.unified_diff(old.splitlines(), new.splitlines(), old_name, new_name, lineterm=""):
        kind = "meta" if line.startswith(("---", "+++", "@@")) else {"+": "add", "-": "del"}.get(line[:1], "ctx")
        lines.append({"kind": kind, "text": line})
        if len(lines) >= DIFF_MAX_LINES:
            lines.append({"kind": "meta", "text": "(diff cut here)"})
            break
    return lines
