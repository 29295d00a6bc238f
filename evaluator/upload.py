"""Upload validation: the checks every submission passes before anything runs.

Standard library only: the site's upload form calls `validate_source` without importing torch.
"""
from __future__ import annotations

import ast

MAX_BYTES = 256 * 1024
ENTRY = "custom_kernel"


def check_upload(data: bytes | str) -> list[tuple[str, str]]:
    """[(reason_code, message)]; empty when the upload may be evaluated."""
    if isinstance(data, str):
        try:
            data = data.encode("utf-8")
        except UnicodeEncodeError:
            return [("bad_upload", "the file is not valid UTF-8")]
    if len(data) > MAX_BYTES:
        return [("bad_upload", f"the file is {len(data)} bytes; at most {MAX_BYTES} bytes (256 KiB) are accepted")]
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        return [("bad_upload", f"the file is not valid UTF-8 (byte {e.start})")]
    try:
        tree = ast.parse(text, filename="submission.py")
    except SyntaxError as e:
        return [("bad_upload", f"the file is not valid Python: {e.msg} (line {e.lineno})")]
    except (ValueError, RecursionError, MemoryError) as e:
        return [("bad_upload", f"the file is not valid Python: {type(e).__name__}")]
    if not defines_entry(tree):
        return [("no_custom_kernel", f"the file does not define a top-level `{ENTRY}`")]
    return []


def validate_source(text: bytes | str) -> list[str]:
    """Human-readable errors for an upload; empty when it may be evaluated."""
    return [message for _, message in check_upload(text)]


def defines_entry(tree: ast.Module) -> bool:
    return any(_binds_entry(node) for node in _top_level(tree.body))


def _top_level(body):
    # statements executed at import: the module body and the bodies of top-level if / try / with
    for node in body:
        yield node
        if isinstance(node, ast.If):
            yield from _top_level(node.body)
            yield from _top_level(node.orelse)
        elif isinstance(node, ast.Try):
            for block in (node.body, node.orelse, node.finalbody):
                yield from _top_level(block)
            for handler in node.handlers:
                yield from _top_level(handler.body)
        elif isinstance(node, ast.With):
            yield from _top_level(node.body)


def _binds_entry(node: ast.AST) -> bool:
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return node.name == ENTRY
    if isinstance(node, ast.Assign):
        return any(_names_entry(t) for t in node.targets)
    if isinstance(node, (ast.AnnAssign, ast.AugAssign)):
        return _names_entry(node.target)
    if isinstance(node, (ast.Import, ast.ImportFrom)):
        return any((alias.asname or alias.name) == ENTRY for alias in node.names)
    return False


def _names_entry(target: ast.AST) -> bool:
    if isinstance(target, ast.Name):
        return target.id == ENTRY
    if isinstance(target, (ast.Tuple, ast.List)):
        return any(_names_entry(t) for t in target.elts)
    return False
