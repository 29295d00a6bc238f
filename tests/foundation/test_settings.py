import os
import subprocess
import sys
from pathlib import Path

import pytest

from leaderboard.envutil import ConfigError, database_from_url, envbool, envint

ROOT = Path(__file__).resolve().parents[2]


def _django_setup(env_overrides: dict) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k not in ("SECRET_KEY", "DEBUG", "DATABASE_URL")}
    env.update(env_overrides)
    code = "import django; django.setup(); from django.conf import settings; print(settings.DATABASES['default']['ENGINE'])"
    return subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True)


def test_it_refuses_to_start_without_secret_key_when_debug_off():
    result = _django_setup({"DEBUG": "0", "DJANGO_SETTINGS_MODULE": "leaderboard.settings"})
    assert result.returncode != 0
    assert "SECRET_KEY must be set" in result.stderr


def test_it_starts_with_secret_key_when_debug_off():
    result = _django_setup({"DEBUG": "0", "SECRET_KEY": "x" * 50, "DJANGO_SETTINGS_MODULE": "leaderboard.settings"})
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "django.db.backends.sqlite3"


def test_database_url_switches_to_postgresql():
    result = _django_setup({"DATABASE_URL": "postgres://u:p%40ss@db.example:5544/kb", "DJANGO_SETTINGS_MODULE": "leaderboard.settings"})
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "django.db.backends.postgresql"
    cfg = database_from_url("postgres://u:p%40ss@db.example:5544/kb")
    assert (cfg["USER"], cfg["PASSWORD"], cfg["HOST"], cfg["PORT"], cfg["NAME"]) == ("u", "p@ss", "db.example", "5544", "kb")


def test_env_helpers_reject_bad_values(monkeypatch):
    monkeypatch.setenv("X_BOOL", "maybe")
    with pytest.raises(ConfigError):
        envbool("X_BOOL", True)
    monkeypatch.setenv("X_INT", "12a")
    with pytest.raises(ConfigError):
        envint("X_INT", 1)
    monkeypatch.setenv("X_BOOL", "off")
    assert envbool("X_BOOL", True) is False
    with pytest.raises(ConfigError):
        database_from_url("mysql://u@h/db")


def test_no_secret_is_committed():
    tracked = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True).stdout.split()
    assert not any(p.startswith("var/") for p in tracked)
    settings_text = (ROOT / "leaderboard" / "settings.py").read_text()
    assert "SECRET_KEY = \"" not in settings_text and "SECRET_KEY = '" not in settings_text
