"""The architecture's three import rules (docs/architecture.md), read from the source with ast:

1. evaluator/ imports nothing of the site or the box (no django, celery, leaderboard, sandbox);
2. sandbox/ imports nothing of the site, and of the evaluator only its public face;
3. leaderboard/ imports of the evaluator only its public face: names of `evaluator.__all__`,
   from the package itself, never a module inside it.

Imports inside functions count too. The rules are checked on a planted violation first, so that a
checker that finds nothing cannot pass."""
import ast
from pathlib import Path

import evaluator

ROOT = Path(__file__).resolve().parents[2]
FACE = set(evaluator.__all__)
SITE = ("django", "celery", "leaderboard")


def _imports(source: str):
    """(module, names) for every import statement; names is None for `import x`."""
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield alias.name, None
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            yield node.module, [a.name for a in node.names]


def _top(module: str) -> str:
    return module.split(".")[0]


def violations(layer: str, source: str) -> list[str]:
    found = []
    for module, names in _imports(source):
        top = _top(module)
        if layer == "evaluator" and top in SITE + ("sandbox",):
            found.append(f"evaluator imports {module}")
        if layer in ("sandbox", "leaderboard"):
            if layer == "sandbox" and top in SITE:
                found.append(f"sandbox imports {module}")
            if top == "evaluator" and module != "evaluator":
                found.append(f"{layer} imports {module}, inside the evaluator")
            if module == "evaluator" and names is not None and set(names) - FACE:
                found.append(f"{layer} imports {sorted(set(names) - FACE)} from evaluator, beyond its face")
    return found


def _layer_violations(layer: str) -> list[str]:
    found = []
    for path in sorted((ROOT / layer).rglob("*.py")):
        if "migrations" in path.parts:
            continue
        found += [f"{path.relative_to(ROOT)}: {v}" for v in violations(layer, path.read_text())]
    return found


def test_the_checker_finds_planted_violations():
    assert violations("evaluator", "def f():\n    from leaderboard import services\n")
    assert violations("evaluator", "import django.conf\n")
    assert violations("sandbox", "from leaderboard.models import Submission\n")
    assert violations("leaderboard", "from evaluator.contract.upload import check_upload\n")
    assert violations("leaderboard", "import evaluator.judge\n")
    assert violations("leaderboard", "from evaluator import judge\n")
    assert violations("leaderboard", "from evaluator import check_upload, validate_report\n") == []


def test_evaluator_imports_nothing_of_the_site_or_the_box():
    assert _layer_violations("evaluator") == []


def test_sandbox_imports_nothing_of_the_site_and_only_the_evaluators_face():
    assert _layer_violations("sandbox") == []


def test_leaderboard_imports_only_the_evaluators_face():
    assert _layer_violations("leaderboard") == []


def test_the_face_resolves():
    for name in FACE:
        assert getattr(evaluator, name) is not None, name
