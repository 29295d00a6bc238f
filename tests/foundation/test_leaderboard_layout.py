"""The layout of leaderboard/ (docs/architecture.md): at most 16 modules directly under it, the rest
in packages (services/, selectors/, serving/, client/, ...); and the CLI, a client of the JSON API,
imports neither Django nor Celery, whether imported or run as `python -m leaderboard.cli`.

Each check is run on a planted breach first, so that one that finds nothing cannot pass."""
import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
MOST_TOP_MODULES = 16
SITE = {"django", "celery"}


def top_modules(package: Path) -> list[str]:
    """The .py files directly in `package`, not in its subpackages."""
    return sorted(p.name for p in package.glob("*.py"))


def test_the_count_sees_a_planted_module(tmp_path):
    for i in range(MOST_TOP_MODULES + 1):
        (tmp_path / f"m{i}.py").write_text("")
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "inner.py").write_text("")
    assert len(top_modules(tmp_path)) == MOST_TOP_MODULES + 1


def test_at_most_16_modules_directly_under_leaderboard():
    modules = top_modules(ROOT / "leaderboard")
    assert len(modules) <= MOST_TOP_MODULES, modules


def site_in_sys_modules(code: str) -> set[str]:
    """Which of django and celery a fresh interpreter has in sys.modules after running `code`."""
    probe = (f"{code}\nimport json, sys\n"
             "print(json.dumps(sorted({m.split('.')[0] for m in sys.modules} & {'django', 'celery'})))")
    done = subprocess.run([sys.executable, "-c", probe], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return set(json.loads(done.stdout.splitlines()[-1]))


def site_imported(*argv: str) -> tuple[subprocess.CompletedProcess, set[str]]:
    """Run `python -X importtime ARGV...` and say which of django and celery it imported (each
    module an interpreter imports is a line of its stderr)."""
    done = subprocess.run([sys.executable, "-X", "importtime", *argv], cwd=ROOT, capture_output=True,
                          text=True, timeout=120)
    names = {line.rsplit("|", 1)[1].strip().split(".")[0]
             for line in done.stderr.splitlines() if line.startswith("import time:") and "|" in line}
    return done, names & SITE


def test_the_checks_find_a_planted_import():
    assert site_in_sys_modules("import django\nimport leaderboard.cli") == {"django"}
    assert site_imported("-c", "import celery")[1] == {"celery"}


def test_importing_the_cli_loads_neither_django_nor_celery():
    assert site_in_sys_modules("import leaderboard.cli") == set()


def test_running_the_cli_loads_neither_django_nor_celery():
    done, site = site_imported("-m", "leaderboard.cli", "--help")
    assert done.returncode == 0 and "usage: python -m leaderboard.cli" in done.stdout, done.stderr
    assert site == set()
