"""The evaluator's tests are laid out like its packages (docs/testing.md, "Where a module's test
lives"), so that a module's test is found by its path:

- no test file sits directly in tests/evaluator/: each lives in the folder of the package it tests;
- every folder tests/evaluator/<pkg>/ names a package evaluator/<pkg>/, except whole/ (runs through
  the top-level modules, `python -m evaluator`) and fixtures/ (submissions the tests evaluate);
- every module under evaluator/ (not `__init__`, not `__main__`) is imported by at least one test
  file under tests/ (a `test_*.py`; a helper or a conftest.py does not count), inside functions too: `from evaluator.x import y` counts for `evaluator.x`, and for
  `evaluator.x.y` when y is a module;
- no two test files under tests/ share a name (pytest's default "prepend" import mode, with no
  `__init__.py`, imports each test file by its bare name).

Each check runs on a planted breach first, in a tmp tree, so that a check that finds nothing cannot
pass."""
import ast
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
NOT_PACKAGES = {"whole", "fixtures"}  # tests/evaluator/ folders that name no evaluator package


def flat_tests(tests: Path) -> list[str]:
    return sorted(p.name for p in (tests / "evaluator").glob("test_*.py"))


def stray_folders(tests: Path, root: Path) -> list[str]:
    return sorted(d.name for d in (tests / "evaluator").iterdir()
                  if d.is_dir() and d.name not in NOT_PACKAGES and not d.name.startswith((".", "__"))
                  and not (root / "evaluator" / d.name / "__init__.py").is_file())


def modules(root: Path) -> set[str]:
    found = set()
    for p in (root / "evaluator").rglob("*.py"):
        if p.stem in ("__init__", "__main__") or "__pycache__" in p.parts:
            continue
        if p.relative_to(root / "evaluator").parts[:2] == ("tasks", "builtin"):
            continue  # task folders: data the loader reads by path (tests/evaluator/tasks loads each)
        found.add(".".join(p.relative_to(root).with_suffix("").parts))
    return found


def imported(tests: Path) -> set[str]:
    """Every dotted name a test file under tests/ imports, and for `from a import b` also `a.b`."""
    names = set()
    for p in tests.rglob("test_*.py"):
        try:
            tree = ast.parse(p.read_text())
        except (SyntaxError, UnicodeDecodeError):
            continue  # a test may hold a broken file on purpose (none does today)
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                names.update(a.name for a in node.names)
            elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                names.add(node.module)
                names.update(f"{node.module}.{a.name}" for a in node.names)
    return names


def untested(root: Path, tests: Path) -> list[str]:
    return sorted(modules(root) - imported(tests))


def same_names(tests: Path) -> list[str]:
    counts = Counter(p.name for p in tests.rglob("test_*.py"))
    return sorted(name for name, n in counts.items() if n > 1)


def _write(path: Path, text: str = "") -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def test_the_checks_find_planted_breaches(tmp_path):
    root, tests = tmp_path, tmp_path / "tests"
    for module in ("__init__", "__main__", "cli", "judge/__init__", "judge/a", "judge/b", "wire/__init__",
                   "wire/c", "wire/d"):
        _write(root / "evaluator" / f"{module}.py")
    _write(tests / "evaluator" / "test_flat.py")
    _write(tests / "evaluator" / "gone" / "test_gone_x.py")  # no evaluator/gone/
    _write(tests / "evaluator" / "whole" / "test_whole_x.py", "def test():\n    import evaluator.cli\n")
    _write(tests / "evaluator" / "fixtures" / "test_broken.py", "def (:\n")
    _write(tests / "evaluator" / "wire" / "wire_helpers.py", "from evaluator.wire import d\n")  # not a test
    _write(tests / "evaluator" / "judge" / "test_judge_a.py", "from evaluator.judge import a\n")
    _write(tests / "evaluator" / "wire" / "test_wire_c.py", "from evaluator.wire.c import thing\n")
    _write(tests / "web" / "test_judge_a.py")
    assert flat_tests(tests) == ["test_flat.py"]
    assert stray_folders(tests, root) == ["gone"]
    # b is imported by nothing, d by a helper only; cli inside a function and a through
    # `from evaluator.judge import a` count
    assert untested(root, tests) == ["evaluator.judge.b", "evaluator.wire.d"]
    assert same_names(tests) == ["test_judge_a.py"]


def test_no_test_file_sits_directly_in_tests_evaluator():
    assert flat_tests(ROOT / "tests") == []


def test_every_folder_of_tests_evaluator_names_an_evaluator_package():
    assert stray_folders(ROOT / "tests", ROOT) == []


def test_every_evaluator_module_is_imported_by_a_test():
    assert modules(ROOT), "no evaluator module found"
    assert untested(ROOT, ROOT / "tests") == []


def test_no_two_test_files_share_a_name():
    assert same_names(ROOT / "tests") == []
