"""Numbers past a database integer answer a form error on SQLite too (tests/foundation/sqlite_case.py
in a pytest of its own, without DATABASE_URL, so on the SQLite of `make run`)."""
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_a_huge_id_is_a_form_error_on_sqlite(tmp_path):
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "DJANGO_")) and k != "DATABASE_URL"}
    env["VAR_DIR"] = str(tmp_path)  # its database file, not the checkout's var/db.sqlite3
    run = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                          "tests/foundation/sqlite_case.py"], cwd=ROOT, env=env, capture_output=True, text=True,
                         timeout=300)
    out = run.stdout + run.stderr
    assert run.returncode == 0 and "1 passed" in out, out[-3000:]
