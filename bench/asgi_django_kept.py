"""For bench/site_load.py --app bench.asgi_django_kept:application only: the site as
leaderboard/asgi.py serves it, without the layer that answers a caller's kept reads before Django
(leaderboard/asgi_kept.py): those answers then come from Django's own keeping (api/owncache), as
they did before the layer. Not used by the site."""
from leaderboard import asgi
from leaderboard.asgi_kept import KeptLayer

layer = asgi.application.app
assert isinstance(layer, KeptLayer), layer
asgi.application.app = layer.app  # the wait layer now calls Django's side directly
application = asgi.application
