"""The site as an ASGI application: what `make run` and a deployment serve with uvicorn.

ASGI for one reason: a client waiting on `GET /api/submissions/<id>?wait=S` is a coroutine, not a
thread (leaderboard/serving/asgi_wait.py, the layer in front of Django). Django itself runs as the WSGI
application it is, inside the ASGI server on a fixed pool of WEB_THREADS threads (a2wsgi's
WSGIMiddleware): each thread keeps its persistent database connection, a request costs one hop
into the pool, and requests beyond the pool wait their turn as coroutines. Django's own ASGI
handler was measured and set aside: it runs each sync request on a new thread of its own, with a
hop per middleware, and served a cached task page at a quarter of the rate or less
(docs/bench/site-load.md, "The web server").

Kept answers (a caller's own API reads, a visitor's pages, the public API reads) are sent before
Django while they still hold (leaderboard/serving/asgi_kept.py). Every body is read whole in the event
loop, within a deadline and its route's limit, before the request takes a thread
(leaderboard/serving/asgi_body.py): a client that sends slowly holds a coroutine, not one of Django's
threads.

The client's address is the connection's: uvicorn runs with --no-proxy-headers (scripts/web.sh),
since its default takes X-Forwarded-For from any client on 127.0.0.1, and so from anyone who can
reach a site served there, which reset the throttles per address with one header. A proxy's
X-Forwarded-For and X-Forwarded-Proto count only from the addresses in TRUSTED_PROXY_IPS, through
uvicorn's own middleware applied here (a deployment starts uvicorn with --no-proxy-headers too:
docs/deployment.md).

SERVE_STATIC=1 (scripts/web.sh sets it) adds Django's own static files handler, which serves
static/ as `runserver --insecure` did: a development stack has no proxy in front of it. A
deployment leaves it unset and its proxy serves var/staticfiles/.
"""
import os

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "leaderboard.settings")

from a2wsgi import WSGIMiddleware  # noqa: E402
from django.conf import settings  # noqa: E402
from django.core.wsgi import get_wsgi_application  # noqa: E402

django_application = get_wsgi_application()
if os.environ.get("SERVE_STATIC") == "1":
    from django.contrib.staticfiles.handlers import StaticFilesHandler

    django_application = StaticFilesHandler(django_application)

from leaderboard.serving.asgi_body import DrainBody, ReadBody  # noqa: E402 - after Django's set-up
from leaderboard.serving.asgi_kept import KeptLayer  # noqa: E402
from leaderboard.serving.asgi_wait import WaitLayer  # noqa: E402

application = WaitLayer(KeptLayer(ReadBody(DrainBody(WSGIMiddleware(django_application,
                                                                      workers=settings.WEB_THREADS)))))
if settings.TRUSTED_PROXY_IPS:
    from uvicorn.middleware.proxy_headers import ProxyHeadersMiddleware

    application = ProxyHeadersMiddleware(application, trusted_hosts=settings.TRUSTED_PROXY_IPS)


def _freeze_what_lives_for_good() -> None:
    """Everything imported at start-up lives as long as the process: moved out of the garbage
    collector's sight, a full collection scans a third as many objects. Those collections stop
    every thread of the process; at 170,000 objects they took 60-115 ms under load and made the
    slowest percent of all requests (docs/bench/site-load.md, "Pauses"). The modules the first
    requests would import (the URL patterns and the API behind them, the charts' Plotly) are
    imported first, so that they are frozen too."""
    import gc

    from django.urls import get_resolver

    import leaderboard.web.charts  # noqa: F401 - Plotly's figure classes

    get_resolver().url_patterns  # imports every view module and builds the API's operations
    gc.collect()
    gc.freeze()


_freeze_what_lives_for_good()
