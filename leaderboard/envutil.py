"""Typed reads of environment variables that fail loudly on bad values."""
import os


class ConfigError(RuntimeError):
    pass


def envbool(name: str, default: bool) -> bool:
    raw = os.environ.get(name)
    if raw is None or raw == "":
        return default
    value = raw.strip().lower()
    if value in ("1", "true", "yes", "on"):
        return True
    if value in ("0", "false", "no", "off"):
        return False
    raise ConfigError(f"{name}={raw!r} is not a boolean (use 1/0, true/false)")


def envint(name: str, default: int) -> int:
    raw = os.environ.get(name)
    if raw is None or raw == "":
        return default
    try:
        return int(raw)
    except ValueError:
        raise ConfigError(f"{name}={raw!r} is not an integer") from None


def envstr(name: str, default: str) -> str:
    return os.environ.get(name) or default


def database_from_url(url: str) -> dict:
    """postgres://user:pass@host:port/name -> a Django DATABASES entry (psycopg 3)."""
    from urllib.parse import unquote, urlparse

    parsed = urlparse(url)
    if parsed.scheme not in ("postgres", "postgresql"):
        raise ConfigError(f"DATABASE_URL scheme {parsed.scheme!r} unsupported: use postgres://")
    return {
        "ENGINE": "django.db.backends.postgresql",
        "NAME": unquote(parsed.path.lstrip("/")),
        "USER": unquote(parsed.username or ""),
        "PASSWORD": unquote(parsed.password or ""),
        "HOST": parsed.hostname or "",
        "PORT": str(parsed.port or ""),
        "CONN_MAX_AGE": 60,
        "CONN_HEALTH_CHECKS": True,
    }


def weak_secret_key(key: str) -> bool:
    """Django's own measure of a weak key (`check --deploy`, security.W009), applied at start-up:
    a deployment that never runs the check must not run on a guessable key."""
    from django.core.checks.security.base import (SECRET_KEY_INSECURE_PREFIX, SECRET_KEY_MIN_LENGTH,
                                                  SECRET_KEY_MIN_UNIQUE_CHARACTERS)

    return (len(key) < SECRET_KEY_MIN_LENGTH or len(set(key)) < SECRET_KEY_MIN_UNIQUE_CHARACTERS
            or key.startswith(SECRET_KEY_INSECURE_PREFIX))


def write_private(path, text: str) -> None:
    """Create a file readable by its owner only (0600 from the first byte, whatever the umask)."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w") as f:
        f.write(text)


def private_file(path):
    """Make sure the file exists with mode 0600 and return its path (for SQLite's database)."""
    try:
        os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))
    except FileExistsError:
        os.chmod(path, 0o600)
    return path
