"""The source a task page shows as the reference: the `reference` function and the module-level
helpers and constants it uses, in the order its module defines them.

`inspect.getsource(reference)` alone showed transformer_block's `return _block(...)` without
`_block`, so the reference did not say what a kernel must compute. The module is read with `ast`,
never run again; imported names (torch, F, the shared helpers of tasks/base.py) are left out.
"""
from __future__ import annotations

import ast
import inspect
import linecache

from evaluator import parse_python


def reference_source(func) -> str:
    """`func`'s source, preceded by every top-level function, class and constant of its module that
    it uses, directly or through another of them. Falls back to `inspect.getsource(func)`."""
    own = inspect.getsource(func)
    try:
        text = "".join(linecache.getlines(inspect.getsourcefile(func), func.__globals__))
    except (OSError, TypeError, AttributeError):
        return own
    return reference_in_text(text, func.__name__) or own


def reference_in_text(text: str, name: str = "reference") -> str | None:
    """The function `name` of a module's source and what it uses of the module, in module order;
    None when the text does not parse or defines no such function. Read with ast, never run: a
    folder task's reference.py as describe hands it over is shown this way."""
    try:
        tree = parse_python(text)
    except (SyntaxError, ValueError):
        return None
    defined = _top_level_definitions(tree)
    start = defined.get(name)
    if not isinstance(start, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return None
    wanted = _used_definitions(start, defined)
    lines = text.splitlines()
    out = ""
    previous = None
    for node in tree.body:  # module order: a helper and its constants before the reference
        if node not in wanted:
            continue
        if previous is not None:  # constants one under the other, two blank lines around a def (PEP 8)
            out += "\n" if not (_is_def(node) or _is_def(previous)) else "\n\n\n"
        first = min([node.lineno] + [d.lineno for d in getattr(node, "decorator_list", [])])
        out += "\n".join(lines[first - 1:node.end_lineno])
        previous = node
    return out + "\n"


def _is_def(node) -> bool:
    return isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))


def _top_level_definitions(tree: ast.Module) -> dict:
    """{name: node} of the module's top-level functions, classes and one-name assignments."""
    found = {}
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            found[node.name] = node
        elif isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            found[node.targets[0].id] = node
        elif isinstance(node, ast.AnnAssign) and node.value is not None and isinstance(node.target, ast.Name):
            found[node.target.id] = node
    return found


def _local_names(node) -> set:
    """Names a function binds itself (its parameters and assignments): they hide the module's."""
    if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return set()
    args = node.args
    names = {a.arg for a in args.posonlyargs + args.args + args.kwonlyargs}
    names.update(a.arg for a in (args.vararg, args.kwarg) if a is not None)
    names.update(n.id for n in ast.walk(node) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store))
    return names


def _used_definitions(start, defined: dict) -> set:
    """The definitions `start` reaches through the names it reads, itself included."""
    wanted, todo = {start}, [start]
    while todo:
        node = todo.pop()
        local = _local_names(node)
        for n in ast.walk(node):
            if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load) and n.id not in local:
                target = defined.get(n.id)
                if target is not None and target not in wanted:
                    wanted.add(target)
                    todo.append(target)
    return wanted
