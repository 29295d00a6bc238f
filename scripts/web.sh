#!/usr/bin/env bash
# The web server as `make run` starts it: scripts/web.sh HOST PORT (tests start it the same way).
# uvicorn on the ASGI application (leaderboard/asgi.py): an API client waiting on ?wait= is a
# coroutine, not a thread. SERVE_STATIC=1: it serves static/ itself, with DEBUG off too (no proxy
# in front of a development stack). At Ctrl-C a request still open has 5 s before it is closed.
# --no-proxy-headers: uvicorn's default takes X-Forwarded-For from 127.0.0.1 as the client's
# address; the application trusts a proxy's headers only from TRUSTED_PROXY_IPS (leaderboard/asgi.py).
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
cd "$ROOT"
export SERVE_STATIC=1
exec .venv/bin/uvicorn leaderboard.asgi:application --host "${1:?usage: scripts/web.sh HOST PORT}" \
    --port "${2:?usage: scripts/web.sh HOST PORT}" --timeout-graceful-shutdown 5 --lifespan off \
    --no-server-header --no-proxy-headers --log-level warning
