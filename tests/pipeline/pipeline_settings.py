"""Settings for the worker and web server processes the pipeline tests start: the project's own
settings with the repair job's clocks shortened, so that a lost message or a dead worker is
noticed in seconds instead of minutes. Nothing else differs."""
from leaderboard.settings import *  # noqa: F401,F403

EVAL_REAPER_INTERVAL_S = 2
EVAL_LOST_MESSAGE_AFTER_S = 4
EVAL_HEARTBEAT_S = 2
EVAL_STALE_AFTER_S = 30
EVAL_RETRY_BACKOFF_S = 1
# the test sends all its uploads from one account at once
EVAL_MAX_ACTIVE_PER_USER = 100
WORKER_ALIVE_EVERY_S = 1
WORKER_ALIVE_TTL_S = 4
