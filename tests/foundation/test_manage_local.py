"""manage.py outside `make run`: in a checkout that make run has served it reads that checkout's
key (var/dev-secret-key), so the README's `manage.py changepassword admin` works; without one it
answers a missing SECRET_KEY in one line, never a traceback."""
from __future__ import annotations

import os
import secrets
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def manage(var: Path, *args: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k not in ("SECRET_KEY", "ALLOWED_HOSTS", "DATABASE_URL")}
    env.update(DEBUG="0", VAR_DIR=str(var))
    return subprocess.run([sys.executable, "manage.py", *args], cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=120)


def test_reads_the_checkouts_key(tmp_path):
    (tmp_path / "dev-secret-key").write_text(secrets.token_urlsafe(50))
    p = manage(tmp_path, "check")
    assert p.returncode == 0, p.stderr
    assert "no issues" in p.stdout


def test_no_key_is_one_clear_line(tmp_path):
    p = manage(tmp_path, "check")
    assert p.returncode != 0
    assert "Traceback" not in p.stderr
    assert p.stderr.strip().startswith("manage.py: SECRET_KEY must be set when DEBUG is off")
    assert "make run" in p.stderr


def test_a_set_key_wins_over_the_file(tmp_path):
    (tmp_path / "dev-secret-key").write_text(secrets.token_urlsafe(50))
    env_key = "weak"
    env = {k: v for k, v in os.environ.items() if k not in ("ALLOWED_HOSTS", "DATABASE_URL")}
    env.update(DEBUG="0", VAR_DIR=str(tmp_path), SECRET_KEY=env_key, ALLOWED_HOSTS="localhost")
    p = subprocess.run([sys.executable, "manage.py", "check"], cwd=ROOT, env=env, capture_output=True, text=True,
                       timeout=120)
    assert p.returncode != 0 and "too weak" in p.stderr  # the environment's key was read, not the file's
