#!/usr/bin/env bash
# `make run`: Redis, one Celery worker (with its periodic jobs) and the web server on
# http://127.0.0.1:8000, all stopped together on Ctrl-C. Without a GPU the worker evaluates on
# the CPU (Triton through its interpreter).
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
cd "$ROOT"
PY=.venv/bin/python
# a development stack: debug pages on this machine only (the settings' default is off)
export DEBUG="${DEBUG:-1}"
# the database, logs and Redis files are the owner's alone
umask 077
mkdir -p var

# --- what the machine must have --------------------------------------------------------------
missing=()
command -v redis-server >/dev/null || missing+=(redis-server)
engine=0
if command -v docker >/dev/null && docker info >/dev/null 2>&1; then engine=1; fi
if [ "$engine" = 0 ] && ! command -v bwrap >/dev/null; then missing+=(bubblewrap); fi
if [ ${#missing[@]} -gt 0 ]; then
    if [ "$(id -u)" = 0 ]; then
        echo "installing ${missing[*]} (apt-get)"
        apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
    else
        echo "This machine lacks: ${missing[*]}"
        echo "Install them with:  sudo apt-get install -y ${missing[*]}"
        echo "then run 'make run' again."
        exit 1
    fi
fi

pids=()
stop_all() {
    trap - INT TERM EXIT
    echo; echo "stopping..."
    for pid in "${pids[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
    wait 2>/dev/null || true
}
trap stop_all INT TERM EXIT

# --- Redis: use one that answers, else start our own ----------------------------------------
REDIS_URL="${REDIS_URL:-redis://127.0.0.1:6379/0}"
export REDIS_URL
redis_port="$(echo "$REDIS_URL" | sed -E 's#.*:([0-9]+)/?.*#\1#')"
if ! redis-cli -p "$redis_port" ping >/dev/null 2>&1; then
    redis-server --port "$redis_port" --bind 127.0.0.1 --dir "$ROOT/var" --dbfilename redis.rdb \
        --appendonly yes --appenddirname redis-aof >var/redis.log 2>&1 &
    pids+=($!)
    for _ in $(seq 50); do redis-cli -p "$redis_port" ping >/dev/null 2>&1 && break; sleep 0.1; done
fi

# --- database, tasks, admin --------------------------------------------------------------
$PY manage.py migrate --noinput
$PY manage.py load_tasks
$PY manage.py create_admin --if-missing

# --- worker and web server -------------------------------------------------------------------
queue="$($PY -c 'import django,os;os.environ.setdefault("DJANGO_SETTINGS_MODULE","leaderboard.settings");django.setup();from django.conf import settings;print(settings.EVAL_QUEUE)')"
.venv/bin/celery -A leaderboard worker -B -n "worker-$queue@%h" -Q "$queue" -c 1 --prefetch-multiplier 1 \
    --schedule var/celerybeat-schedule -l INFO >var/worker.log 2>&1 &
pids+=($!)
echo "worker started on queue $queue (log: var/worker.log)"
$PY manage.py runserver 127.0.0.1:8000 --noreload &
pids+=($!)
echo "site on http://127.0.0.1:8000  (Ctrl-C stops everything)"
wait -n "${pids[@]}"
