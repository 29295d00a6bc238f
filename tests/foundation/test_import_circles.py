"""No import circle inside leaderboard/, evaluator/ or sandbox/: every import of one of a
package's modules by another (inside functions too) is an edge, and the graph must have a
topological order.

A circle hides which module is the lower layer; the services send Celery tasks by name so that
the task module can call them without either importing the other. The checker is run on a
planted circle first, so that one that finds nothing cannot pass."""
import ast
import graphlib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = "leaderboard"


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _imported(node, current: str, is_package: bool) -> list[str]:
    """The modules an import statement names, resolved to absolute dotted names."""
    if isinstance(node, ast.Import):
        return [alias.name for alias in node.names]
    if node.level:
        base = current.split(".")
        base = base[: len(base) - node.level + (1 if is_package else 0)]
        module = ".".join(base + ([node.module] if node.module else []))
    else:
        module = node.module or ""
    # `from pkg import name` imports pkg.name when that is a module; resolve() below decides
    return [module] + [f"{module}.{alias.name}" for alias in node.names]


def import_graph(sources: dict[str, tuple[str, bool]]) -> dict[str, set[str]]:
    """{module: the modules of `sources` it imports}; sources maps a module name to (its source,
    whether it is a package's __init__)."""
    graph = {}
    for name, (source, is_package) in sources.items():
        edges = set()
        # a module's own ancestor packages are imported before it whatever it says (`from . import
        # x` names the package, but the package's __init__ runs first in any case): not an edge
        ancestors = {".".join(name.split(".")[:i]) for i in range(1, name.count(".") + 1)}
        for node in ast.walk(ast.parse(source)):
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                edges |= {m for m in _imported(node, name, is_package)
                          if m in sources and m != name and m not in ancestors}
        graph[name] = edges
    return graph


def circle(graph: dict[str, set[str]]) -> list[str]:
    """One import circle as [a, b, ..., a], or [] when there is none."""
    try:
        tuple(graphlib.TopologicalSorter(graph).static_order())
    except graphlib.CycleError as exc:
        return list(exc.args[1])
    return []


def package_sources(package: str = PACKAGE) -> dict[str, tuple[str, bool]]:
    sources = {}
    for path in sorted((ROOT / package).rglob("*.py")):
        if "migrations" in path.parts:
            continue
        sources[module_name(path)] = (path.read_text(), path.name == "__init__.py")
    return sources


def test_the_checker_finds_a_planted_circle():
    planted = {
        "pkg.a": ("from pkg import b\n", False),
        "pkg.b": ("def f():\n    from pkg.c import g\n", False),
        "pkg.c": ("from . import a\n", False),
        "pkg.d": ("import pkg.a\n", False),
    }
    assert set(circle(import_graph(planted))) == {"pkg.a", "pkg.b", "pkg.c"}
    planted["pkg.c"] = ("import os\n", False)
    assert circle(import_graph(planted)) == []


def test_the_checker_reads_the_real_edges():
    graph = import_graph(package_sources())
    assert "leaderboard.services" in graph["leaderboard.tasks"]
    assert "leaderboard.scoring" in graph["leaderboard.selectors"]


@pytest.mark.parametrize("package", ["leaderboard", "evaluator", "sandbox"])
def test_no_import_circle(package):
    assert circle(import_graph(package_sources(package))) == []
