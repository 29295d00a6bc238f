"""Upload validation: the checks every submission passes before anything runs.

Standard library only: the site's upload form calls `validate_source` without importing torch.
"""
from __future__ import annotations

import ast
import threading

MAX_BYTES = 256 * 1024
ENTRY = "custom_kernel"
# a KernelBench-style problem's submission may be a class instead (evaluator/tasks/kernelbench.py)
ENTRIES = (ENTRY, "ModelNew")

# CPython 3.11 keeps the AST builder's recursion count in one place per interpreter, and a parse
# that starts in another thread while one is half-built (its thread gave up the lock in a garbage
# collection) resets it: "SystemError: AST constructor recursion depth mismatch" (python/cpython
# issue 106905), seen as a 500 once in an upload burst of 1,000 from 50 threads. The web server runs
# uploads on several threads, so parses here take turns; one takes milliseconds.
_parsing = threading.Lock()


def parse(text: str, filename: str = "<unknown>") -> ast.Module:
    """ast.parse, one thread at a time (above)."""
    with _parsing:
        return ast.parse(text, filename=filename)


def check_upload(data: bytes | str) -> list[tuple[str, str]]:
    """[(reason_code, message)]; empty when the upload may be evaluated."""
    if isinstance(data, str):
        try:
            data = data.encode("utf-8")
        except UnicodeEncodeError:
            return [("bad_upload", "the file is not valid UTF-8")]
    too_big = size_problem(len(data))
    if too_big:
        return [too_big]
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        return [("bad_upload", f"the file is not valid UTF-8 (byte {e.start})")]
    try:
        tree = parse(text, filename="submission.py")
    except SyntaxError as e:
        return [("bad_upload", f"the file is not valid Python: {e.msg} (line {e.lineno})")]
    except (ValueError, RecursionError, MemoryError) as e:
        return [("bad_upload", f"the file is not valid Python: {type(e).__name__}")]
    if not defines_entry(tree):
        return [("no_custom_kernel", f"the file does not define a top-level `{ENTRY}` "
                                     "(or, for a KernelBench-style task, a class `ModelNew`)")]
    return []


def size_problem(size: int) -> tuple[str, str] | None:
    """(reason_code, message) for an upload of `size` bytes over MAX_BYTES, the one limit on an
    upload: check_upload's first check, and the sandbox's before it makes a box."""
    if size > MAX_BYTES:
        return ("bad_upload", f"the file is {size} bytes; at most {MAX_BYTES} bytes (256 KiB) are accepted")
    return None


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


def _binds_entry(node: ast.AST, names=ENTRIES) -> bool:
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return node.name in names
    if isinstance(node, ast.Assign):
        return any(_names_entry(t, names) for t in node.targets)
    if isinstance(node, (ast.AnnAssign, ast.AugAssign)):
        return _names_entry(node.target, names)
    if isinstance(node, (ast.Import, ast.ImportFrom)):
        return any((alias.asname or alias.name) in names for alias in node.names)
    return False


def _names_entry(target: ast.AST, names=ENTRIES) -> bool:
    if isinstance(target, ast.Name):
        return target.id in names
    if isinstance(target, (ast.Tuple, ast.List)):
        return any(_names_entry(t, names) for t in target.elts)
    return False


def check_signature(data: bytes | str, input_names, task: str) -> list[str]:
    """[message] when the top-level `custom_kernel` cannot take the task's inputs, which the judge
    passes positionally (`custom_kernel(*inputs)`); empty when it can, or when that cannot be told
    from the source alone. Read with `ast`, never imported: a file sent to the wrong task is refused
    at upload instead of queued to crash at its first call."""
    names = [str(n) for n in input_names or ()]
    if not names:
        return []
    try:
        text = data.decode("utf-8") if isinstance(data, bytes) else data
        tree = parse(text, filename="submission.py")
    except (UnicodeDecodeError, SyntaxError, ValueError, RecursionError, MemoryError):
        return []  # check_upload says what is wrong with the file
    args = _entry_arguments(tree)
    if args is None or _accepts(args, len(names)):
        return []
    return [f"custom_kernel takes ({', '.join(names)}) for {task}; this file's takes ({_written(args)}): "
            "choose the task it was written for"]


def _entry_arguments(tree: ast.Module) -> ast.arguments | None:
    """The parameters of the one top-level binding of `custom_kernel` when it is a plain `def` or a
    lambda; None where a decorator, a second binding, an import or an assignment of another object
    makes what it accepts known only by running the file."""
    bindings = [node for node in _top_level(tree.body) if _binds_entry(node, (ENTRY,))]
    if len(bindings) != 1:
        return None
    node = bindings[0]
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return None if node.decorator_list else node.args
    if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.value, ast.Lambda) \
            and isinstance(node.targets[0], ast.Name):
        return node.value.args
    return None


def _accepts(args: ast.arguments, count: int) -> bool:
    """Whether a call with `count` positional arguments binds every required parameter."""
    positional = len(args.posonlyargs) + len(args.args)
    required = positional - len(args.defaults)
    keyword_only_required = any(d is None for d in args.kw_defaults)
    return required <= count and (count <= positional or args.vararg is not None) and not keyword_only_required


def _written(args: ast.arguments) -> str:
    """The parameter list as a person reads it: names, `=...` for a default, `*args`, `**kw`."""
    positional = args.posonlyargs + args.args
    first_default = len(positional) - len(args.defaults)
    parts = [a.arg + ("=..." if i >= first_default else "") for i, a in enumerate(positional)]
    if args.posonlyargs:
        parts.insert(len(args.posonlyargs), "/")
    if args.vararg is not None:
        parts.append("*" + args.vararg.arg)
    elif args.kwonlyargs:
        parts.append("*")
    parts += [a.arg + ("" if d is None else "=...") for a, d in zip(args.kwonlyargs, args.kw_defaults)]
    if args.kwarg is not None:
        parts.append("**" + args.kwarg.arg)
    return ", ".join(parts)
