"""For bench/site_load.py --app bench.asgi_rebuild_every_5s:application only: the site as
leaderboard/asgi.py serves it, with every cached value rebuilt every WEB_REBUILD_MIN_INTERVAL_S
whatever its build cost (leaderboard/web/pagecache.py's REBUILD_COST_FACTOR off), for the side
by side in docs/bench/site-load.md. Not used by the site."""
from leaderboard import asgi
from leaderboard.web import pagecache

pagecache.REBUILD_COST_FACTOR = 0
application = asgi.application
