"""For bench/site_load.py --app bench.asgi_django_kept:application only: the site as
leaderboard/asgi.py serves it, without the layer that sends kept answers before Django
(leaderboard/serving/asgi_kept.py): every answer then comes from Django, a caller's own reads from its own
keeping (api/owncache) and the public ones from pagecache, as before the layer. Not used by the
site."""
from leaderboard import asgi
from leaderboard.serving.asgi_kept import KeptLayer

layer = asgi.application.app
assert isinstance(layer, KeptLayer), layer
asgi.application.app = layer.app  # the wait layer now calls Django's side directly
application = asgi.application
