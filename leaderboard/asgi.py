"""The site as an ASGI application: what `make run` and a deployment serve with uvicorn.

ASGI rather than WSGI for one reason: a client waiting on `GET /api/submissions/<id>?wait=S`
is a coroutine, not a thread (leaderboard/asgi_wait.py, the layer in front of Django); the rest of
the site runs as before, its views on Django's threads, at most settings.WEB_THREADS at once
(leaderboard/asgi_slots.py), with their database connections from a pool of that size
(DATABASE_POOL=1, leaderboard/settings.py).

SERVE_STATIC=1 (scripts/run.sh sets it) adds Django's own static files handler, which serves
static/ as `runserver --insecure` did: a development stack has no proxy in front of it. A
deployment leaves it unset and its proxy serves var/staticfiles/.
"""
import os

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "leaderboard.settings")
os.environ.setdefault("DATABASE_POOL", "1")

from django.conf import settings  # noqa: E402 - after the environment above
from django.core.asgi import get_asgi_application  # noqa: E402

django_application = get_asgi_application()
if os.environ.get("SERVE_STATIC") == "1":
    from django.contrib.staticfiles.handlers import ASGIStaticFilesHandler

    django_application = ASGIStaticFilesHandler(django_application)

from leaderboard.asgi_slots import Slots  # noqa: E402 - after Django's set-up
from leaderboard.asgi_wait import WaitLayer  # noqa: E402

application = WaitLayer(Slots(django_application, settings.WEB_THREADS))
