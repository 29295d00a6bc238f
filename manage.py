#!/usr/bin/env python
"""Django's command line. In a checkout that `make run` has served, it reads the same settings
as that site (this checkout's key under var/, the local host names), so that `manage.py
changepassword admin` or `import_results` works on it as the README says; a deployment sets
SECRET_KEY and ALLOWED_HOSTS itself and is never given these defaults."""
import os
import sys
from pathlib import Path


def local_defaults() -> None:
    key = Path(os.environ.get("VAR_DIR", Path(__file__).resolve().parent / "var")) / "dev-secret-key"
    if not os.environ.get("SECRET_KEY") and key.is_file():
        os.environ["SECRET_KEY"] = key.read_text().strip()
        os.environ.setdefault("ALLOWED_HOSTS", "127.0.0.1,localhost")


if __name__ == "__main__":
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "leaderboard.settings")
    local_defaults()
    from django.core.management import execute_from_command_line

    from leaderboard.envutil import ConfigError

    try:
        execute_from_command_line(sys.argv)
    except ConfigError as e:
        sys.exit(f"manage.py: {e}. Set it in the environment, or run `make run` once in this checkout "
                 f"(it writes the checkout's own key to var/dev-secret-key, which manage.py then reads).")
