#!/usr/bin/env bash
# `make run`: Redis, the web server on http://$HOST:$PORT, one Celery beat and the workers, all
# stopped together on Ctrl-C. On a host with NVIDIA GPUs: one worker per GPU, each warmed before
# it takes work, and the committed ruler of the GPU model imported. Without a GPU (or with
# WORKER_DEVICE=cpu) one worker evaluates on the CPU (Triton through its interpreter).
# RUN_PLAN_ONLY=1 prints what would start and exits before anything is installed or started.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
cd "$ROOT"
PY=.venv/bin/python
HOST="${HOST:-127.0.0.1}"
PORT="${PORT:-8000}"
# the site as users meet it: its own error pages and JSON errors under /api/. DEBUG=1 make run
# gives Django's debug pages instead.
export DEBUG="${DEBUG:-0}"
# the database, logs and Redis files are the owner's alone
umask 077
mkdir -p var
# DEBUG off needs a strong key and the host names: this checkout's own key (var/, never committed)
# and this machine's names. Plain HTTP on this machine: cookies without the Secure flag.
if [ -z "${SECRET_KEY:-}" ]; then
    [ -s var/dev-secret-key ] || $PY -c 'import secrets; print(secrets.token_urlsafe(50))' >var/dev-secret-key
    SECRET_KEY="$(cat var/dev-secret-key)"
    export SECRET_KEY
fi
export ALLOWED_HOSTS="${ALLOWED_HOSTS:-127.0.0.1,localhost,$HOST}"
export SECURE_COOKIES="${SECURE_COOKIES:-0}"
# ...but var/ itself stays traversable: `make test` runs PostgreSQL as its own user with its data
# under var/services/, whatever mode the umask or an earlier run gave var/
chmod 0711 var

# --- what this machine evaluates on (leaderboard/launch.py) ----------------------------------
gpus_csv=""
if [ "${WORKER_DEVICE:-}" != cpu ] && command -v nvidia-smi >/dev/null; then
    gpus_csv="$(nvidia-smi --query-gpu=index,name,uuid --format=csv,noheader 2>/dev/null)" || gpus_csv=""
fi
# prints bash assignments, every value quoted by shlex.quote: SITE_DEVICE_TYPE, SITE_ENV,
# WORKER_NODES, WORKER_LOGS, WORKER_GPUS ("" for the CPU worker), RULER, PLAN
plan="$(printf '%s\n' "$gpus_csv" | $PY -m leaderboard.launch)"
eval "$plan"
printf '%s\n' "${PLAN[@]}"
if [ "${RUN_PLAN_ONLY:-0}" = 1 ]; then exit 0; fi
# the same device type and queue in every process: uploads, the beat's periodic jobs and the
# workers meet on one queue, and the pages open on this device type's boards
export "${SITE_ENV[@]}"

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
    local rc=$?
    trap - INT TERM EXIT
    echo; echo "stopping..."
    for pid in "${pids[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
    wait 2>/dev/null || true
    # a Ctrl-C during a warm-up must not go on to start the remaining workers
    exit "$rc"
}
trap stop_all INT TERM EXIT

# A worker or the beat that dies (killed, out of memory) is started again under the same name: a
# worker that starts re-queues the rows its previous process left running (leaderboard/tasks.py),
# so the evaluation it was running ends once. Its loop stops its child on TERM, so stop_all reaches
# the celery process too. The web server and Redis are not restarted: their end ends the stack.
supervise() {  # NAME LOG COMMAND...
    local name="$1" log="$2"; shift 2
    : >"$log"
    (
        child=""
        trap '[ -n "$child" ] && kill -TERM "$child" 2>/dev/null; wait "$child" 2>/dev/null; exit 0' TERM INT
        while true; do
            "$@" >>"$log" 2>&1 &
            child=$!
            wait "$child" && status=0 || status=$?
            echo "$(date '+%H:%M:%S') $name exited with status $status; starting it again in 2 s (log: $log)"
            sleep 2
        done
    ) &
    pids+=($!)
}

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

# --- the ruler of this GPU model -----------------------------------------------------------
if [ -n "$RULER" ]; then
    if [ -f "$RULER" ]; then
        $PY manage.py calibrate --from-json "$RULER" --device-type "$SITE_DEVICE_TYPE" \
            || echo "importing the ruler $RULER failed (above); the pages say the ruler is not calibrated"
    else
        echo "no ruler is published for $WORKER_GPU_NAME ($RULER is absent): its pages say the speedups" \
             "were not measured with a calibrated ruler (docs/deployment.md, The ruler)"
    fi
fi

# --- web server and beat ----------------------------------------------------------------------
# scripts/web.sh: uvicorn on the ASGI application, static/ served; tests start the same script
scripts/web.sh "$HOST" "$PORT" &
pids+=($!)
echo "site on http://$HOST:$PORT  (Ctrl-C stops everything)"
# one beat for the whole site, whatever the number of workers: each would otherwise send every job
supervise beat var/beat.log .venv/bin/celery -A leaderboard beat --schedule var/celerybeat-schedule -l INFO
# the repair of stuck submissions in a process of its own: it must outlive any worker it repairs
supervise repair var/repair.log $PY manage.py requeue_stuck --every "${EVAL_REAPER_INTERVAL_S:-30}"

# --- workers: a GPU's worker starts once its judge cache is warm --------------------------------
for k in "${!WORKER_NODES[@]}"; do
    gpu="${WORKER_GPUS[$k]}"
    if [ -n "$gpu" ]; then
        echo "warming the judge cache on GPU $gpu before its worker takes work:"
        WORKER_GPU_INDEX="$gpu" $PY manage.py warm_judge_cache \
            || echo "warming on GPU $gpu failed (above): its worker starts anyway, its first evaluations compile cold"
    fi
    supervise "worker ${WORKER_NODES[$k]}" "${WORKER_LOGS[$k]}" env WORKER_GPU_INDEX="${gpu:-0}" \
        .venv/bin/celery -A leaderboard worker -n "${WORKER_NODES[$k]}" -Q "$EVAL_QUEUE" \
        -c 1 --prefetch-multiplier 1 -l INFO
    echo "worker ${WORKER_NODES[$k]} started on queue $EVAL_QUEUE (log: ${WORKER_LOGS[$k]})"
done
wait -n "${pids[@]}"
