"""The evaluator's folders are the sides of its trust boundaries, and the imports keep them so
(docs/evaluator.md, "Modules"): every import of one evaluator module by another, inside functions
too, is an edge. The rules are checked on planted breaches first, so that a checker that finds
nothing cannot pass.

- `contract/` is the standard library's and its own: the site and the sandbox read the report
  through it without torch, and nothing of the judge's or the runner's reaches them that way.
- `wire/` and `common/` sit under both sides: they import neither `judge/` nor `runner/`.
- `runner/` imports nothing of `judge/`: it runs where the submission owns every object.
- only `runner/` loads a submission (importlib's file loaders, runpy, exec of a file); the task
  loaders (`tasks/folder.py`, `tasks/kernelbench.py`) load task files, which are staff code, and
  nothing else may. A task's `solutions/` are submissions kept as data: not walked."""
import ast
from pathlib import Path

from test_import_circles import ROOT, import_graph, module_name

EVALUATOR = ROOT / "evaluator"
FORBIDDEN = {  # a package's modules may not import these packages
    "evaluator.contract": ("evaluator.judge", "evaluator.runner", "evaluator.common", "evaluator.wire",
                           "evaluator.tasks", "evaluator.api", "evaluator.cli"),
    "evaluator.wire": ("evaluator.judge", "evaluator.runner", "evaluator.api", "evaluator.cli"),
    "evaluator.common": ("evaluator.judge", "evaluator.runner", "evaluator.api", "evaluator.cli"),
    "evaluator.runner": ("evaluator.judge", "evaluator.api", "evaluator.cli"),
}
THIRD_PARTY_IN_CONTRACT = ("torch", "triton", "numpy", "django")
LOADERS = ("spec_from_file_location", "exec_module", "run_path", "SourceFileLoader")
TASK_LOADERS = ("evaluator.tasks.folder", "evaluator.tasks.kernelbench")


def sources() -> dict[str, tuple[str, bool]]:
    return {module_name(p): (p.read_text(), p.name == "__init__.py") for p in sorted(EVALUATOR.rglob("*.py"))
            if "solutions" not in p.relative_to(EVALUATOR).parts}


def breaches(srcs: dict[str, tuple[str, bool]]) -> list[str]:
    graph = import_graph(srcs)
    found = []
    for module, edges in graph.items():
        for package, banned in FORBIDDEN.items():
            if module == package or module.startswith(package + "."):
                found += [f"{module} imports {e}" for e in sorted(edges)
                          if any(e == b or e.startswith(b + ".") for b in banned)]
    for module, (source, _) in srcs.items():
        tree = ast.parse(source)
        if module.startswith("evaluator.contract"):
            for node in ast.walk(tree):
                names = ([a.name for a in node.names] if isinstance(node, ast.Import)
                         else [node.module or ""] if isinstance(node, ast.ImportFrom) and not node.level else [])
                found += [f"{module} imports {n}" for n in names if n.split(".")[0] in THIRD_PARTY_IN_CONTRACT]
        if not module.startswith("evaluator.runner") and module not in TASK_LOADERS:
            for node in ast.walk(tree):
                name = node.attr if isinstance(node, ast.Attribute) else node.id if isinstance(node, ast.Name) else ""
                if name in LOADERS:
                    found.append(f"{module} loads a file as a module ({name})")
    return found


def test_the_rules_find_planted_breaches():
    planted = {
        "evaluator.contract.a": ("import torch\nfrom evaluator.judge import b\n", False),
        "evaluator.judge.b": ("import importlib.util\ns = importlib.util.spec_from_file_location('x', 'y')\n", False),
        "evaluator.runner.c": ("def f():\n    from evaluator.judge import b\n", False),
        "evaluator.common.d": ("from ..runner import c\n", False),
        "evaluator.runner.e": ("import importlib.util\nimportlib.util.spec_from_file_location('x', 'y')\n", False),
    }
    got = breaches(planted)
    assert "evaluator.contract.a imports torch" in got
    assert "evaluator.contract.a imports evaluator.judge.b" in got
    assert "evaluator.judge.b loads a file as a module (spec_from_file_location)" in got
    assert "evaluator.runner.c imports evaluator.judge.b" in got
    assert "evaluator.common.d imports evaluator.runner.c" in got
    assert not any(line.startswith("evaluator.runner.e") for line in got)


def test_the_evaluator_keeps_its_layers():
    assert breaches(sources()) == []


def test_the_tree_is_laid_out_by_package():
    top = [p.name for p in EVALUATOR.glob("*.py")]
    packages = [p.name for p in EVALUATOR.iterdir() if (p / "__init__.py").is_file()]
    assert len(top) <= 12, top
    assert {"contract", "wire", "common", "judge", "runner", "tasks"} <= set(packages)
