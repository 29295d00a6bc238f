"""For bench/site_load.py --app bench.asgi_django:application only: the site on Django's own ASGI
handler (each sync request on a new thread of its own, a hop per middleware) behind the same
wait layer, to compare with leaderboard/asgi.py's WSGI-on-a-thread-pool. Not used by the site."""
import os

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "leaderboard.settings")

from django.core.asgi import get_asgi_application  # noqa: E402

from leaderboard.serving.asgi_wait import WaitLayer  # noqa: E402

application = WaitLayer(get_asgi_application())
