"""For bench/site_load.py --app bench.asgi_unfrozen:application only: the site as
leaderboard/asgi.py serves it, but with the start-up's objects handed back to the garbage
collector (gc.unfreeze), to measure what the freeze does to the slowest requests. Not used by the
site."""
import gc

from leaderboard.asgi import application  # noqa: F401 - what is served

gc.unfreeze()
