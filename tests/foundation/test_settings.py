import os
import subprocess
import sys
from pathlib import Path

import pytest

from leaderboard.envutil import ConfigError, database_from_url, envbool, envint

ROOT = Path(__file__).resolve().parents[2]
# a key Django's deploy check accepts: 50 characters or more, 5 or more of them different
KEY = "test-only-" + "0123456789abcdef" * 3


def _django_setup(env_overrides: dict, code: str = "", var_dir=None) -> subprocess.CompletedProcess:
    """django.setup() in a fresh process whose environment has none of the site's settings but
    `env_overrides` (and a VAR_DIR of its own when given)."""
    env = {k: v for k, v in os.environ.items()
           if k not in ("SECRET_KEY", "DEBUG", "DATABASE_URL", "ALLOWED_HOSTS", "VAR_DIR")}
    env["DJANGO_SETTINGS_MODULE"] = "leaderboard.settings"
    if var_dir is not None:
        env["VAR_DIR"] = str(var_dir)
    env.update(env_overrides)
    code = code or "print(settings.DATABASES['default']['ENGINE'])"
    code = "import django; django.setup(); from django.conf import settings\n" + code
    return subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True)


def test_debug_is_off_unless_set(tmp_path):
    result = _django_setup({"SECRET_KEY": KEY, "ALLOWED_HOSTS": "example.org"}, "print(settings.DEBUG)",
                           var_dir=tmp_path)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "False"


def test_it_refuses_to_start_without_secret_key_when_debug_off(tmp_path):
    for env in ({"ALLOWED_HOSTS": "example.org"}, {"DEBUG": "0", "ALLOWED_HOSTS": "example.org"}):
        result = _django_setup(env, var_dir=tmp_path)
        assert result.returncode != 0
        assert "SECRET_KEY must be set" in result.stderr


def test_it_refuses_to_start_without_allowed_hosts_when_debug_off(tmp_path):
    result = _django_setup({"SECRET_KEY": KEY}, var_dir=tmp_path)
    assert result.returncode != 0
    assert "ALLOWED_HOSTS must be set" in result.stderr


def test_it_starts_with_secret_key_and_hosts_when_debug_off(tmp_path):
    result = _django_setup({"DEBUG": "0", "SECRET_KEY": KEY, "ALLOWED_HOSTS": "lb.example.org"},
                           "print(settings.DATABASES['default']['ENGINE'], settings.ALLOWED_HOSTS, "
                           "settings.SESSION_COOKIE_SECURE, settings.CSRF_COOKIE_SECURE)", var_dir=tmp_path)
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["django.db.backends.sqlite3", "['lb.example.org']", "True", "True"]


def test_the_sqlite_file_and_the_development_key_are_private(tmp_path):
    result = _django_setup({"DEBUG": "1"}, "from django.db import connection; connection.ensure_connection()",
                           var_dir=tmp_path)
    assert result.returncode == 0, result.stderr
    assert (tmp_path / "db.sqlite3").stat().st_mode & 0o777 == 0o600
    assert (tmp_path / "dev-secret-key").stat().st_mode & 0o777 == 0o600
    # an existing database file made by an older checkout (0644) is tightened at start
    (tmp_path / "db.sqlite3").chmod(0o644)
    assert _django_setup({"DEBUG": "1"}, var_dir=tmp_path).returncode == 0
    assert (tmp_path / "db.sqlite3").stat().st_mode & 0o777 == 0o600


def test_database_url_switches_to_postgresql(tmp_path):
    result = _django_setup({"DEBUG": "1", "DATABASE_URL": "postgres://u:p%40ss@db.example:5544/kb"},
                           var_dir=tmp_path)
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


def test_the_content_security_policy_can_be_replaced_or_left_to_the_proxy(tmp_path):
    code = "print(repr(settings.CONTENT_SECURITY_POLICY))"
    default = _django_setup({"DEBUG": "1"}, code, var_dir=tmp_path)
    assert "script-src 'self';" in default.stdout
    empty = _django_setup({"DEBUG": "1", "CONTENT_SECURITY_POLICY": ""}, code, var_dir=tmp_path)
    assert empty.stdout.strip() == "''"


@pytest.mark.parametrize("key", ["abc", "x" * 60, "django-insecure-" + "0123456789abcdef" * 4],
                         ids=["short", "one-character", "django-insecure"])
def test_it_refuses_to_start_with_a_weak_secret_key_when_debug_off(tmp_path, key):
    result = _django_setup({"SECRET_KEY": key, "ALLOWED_HOSTS": "lb.example.org"}, var_dir=tmp_path)
    assert result.returncode != 0
    assert "SECRET_KEY is too weak" in result.stderr
    assert key not in result.stderr  # the message never quotes the key


def test_it_refuses_to_start_with_any_host_allowed_when_debug_off(tmp_path):
    result = _django_setup({"SECRET_KEY": KEY, "ALLOWED_HOSTS": "lb.example.org,*"}, var_dir=tmp_path)
    assert result.returncode != 0
    assert "not '*'" in result.stderr


def test_development_takes_any_key_and_host(tmp_path):
    result = _django_setup({"DEBUG": "1", "SECRET_KEY": "abc", "ALLOWED_HOSTS": "*"}, "print(settings.ALLOWED_HOSTS)",
                           var_dir=tmp_path)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "['*']"
