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

# --- stopping: the workers first, Redis last --------------------------------------------------
# Redis, the web server and every process the supervising loops start run in sessions of their own
# (setsid): the terminal's Ctrl-C reaches make, this script and the command it is running (a
# migration, a warm-up), not them, and stop_all stops them in an order that loses nothing: each
# worker ends the evaluation it is running and acknowledges it while Redis still answers, then the
# web server, the beat and the repair stop, and Redis last, writing its data out. A second Ctrl-C
# (stop_now) ends everything at once: an evaluation cut short is evaluated again by the next
# `make run`, whose worker re-queues what its previous process left running (leaderboard/tasks.py).
redis_pid="" web_pid="" cut_short=""
worker_loops=() other_loops=()  # supervise's loops: the workers', and the beat's and the repair's

say() { echo "$(date '+%H:%M:%S') $*"; }

alive() {  # PID...: true while one of them runs
    local pid
    for pid in "$@"; do kill -0 "$pid" 2>/dev/null && return 0; done
    return 1
}

wait_gone() {  # SECONDS PID...: true once every PID has ended, false when SECONDS pass first
    local until=$((SECONDS + $1)); shift
    while alive "$@"; do
        [ "$SECONDS" -lt "$until" ] || return 1
        sleep 0.2
    done
}

# "ID SECONDS_LEFT" for each submission the site's workers are evaluating: SECONDS_LEFT until the
# task's hard time limit (EVAL_HARD_LIMIT_S), by which Celery ends it whatever the sandbox does
running_submissions() {
    $PY - "${WORKER_NODES[@]}" <<'EOF' 2>/dev/null || true
import os, socket, sys
import django
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "leaderboard.settings")
django.setup()
from django.conf import settings
from django.utils import timezone
from leaderboard.models import Submission
nodes = [node.replace("%h", socket.gethostname()) for node in sys.argv[1:]]
for s in Submission.objects.filter(status=Submission.Status.RUNNING, worker__in=nodes).order_by("pk"):
    spent = (timezone.now() - s.started_at).total_seconds() if s.started_at else 0
    print(s.pk, max(0, int(settings.EVAL_HARD_LIMIT_S - spent)))
EOF
}

# Kills the workers at once. A bwrap box dies with its worker; a Docker box would run on to its
# deadline, beside (and on the GPU of) the next run's evaluation, so the boxes that mount this
# checkout's evaluator/ are removed with their worker.
kill_workers_now() {
    kill -USR1 "${worker_loops[@]}" 2>/dev/null
    [ "$engine" = 1 ] || return 0
    wait_gone 5 "${worker_loops[@]}"
    docker ps -q --filter label=kernelboard.sandbox \
        | xargs -r docker inspect --format '{{.Id}}{{range .Mounts}} {{.Source}}{{end}}' 2>/dev/null \
        | awk -v ours="$ROOT/evaluator" '{ for (i = 2; i <= NF; i++) if ($i == ours) print $1 }' \
        | xargs -r docker rm -f >/dev/null 2>&1
}

stop_all() {
    local rc=$? busy limit the="the worker"
    # the stop runs to its end whatever fails on the way (a closed terminal, a process already gone)
    set +e
    trap - EXIT
    trap stop_now INT TERM HUP
    echo; say "stopping..."
    [ ${#worker_loops[@]} -lt 2 ] || the="the workers"
    if [ ${#worker_loops[@]} -gt 0 ]; then
        # TERM: Celery's warm shutdown, the worker takes nothing more and ends what it runs
        kill -TERM "${worker_loops[@]}" 2>/dev/null
        busy="$(running_submissions)"
        if [ -n "$busy" ]; then
            cut_short="submission $(echo "$busy" | awk '{print $1}' | paste -sd, - | sed 's/,/, /g')"
            limit=$(( $(echo "$busy" | awk '{print $2}' | sort -n | tail -1) + 30 ))
            say "waiting for $the to finish $cut_short (up to $limit s;" \
                "Ctrl-C again stops at once, and the next make run evaluates it again)..."
        else
            limit=30
            say "waiting for $the to stop (evaluating nothing)..."
        fi
        if wait_gone "$limit" "${worker_loops[@]}"; then
            say "$the stopped"
        else
            say "$the did not stop within $limit s: stopping at once"
            kill_workers_now
        fi
    fi
    stop_the_rest TERM
    # exit: a Ctrl-C during a warm-up must not go on to start the remaining workers
    exit "$rc"
}

stop_now() {
    set +e
    trap '' INT TERM HUP
    say "stopping at once: ${cut_short:-an evaluation cut short} is evaluated again by the next make run"
    kill -USR1 "${other_loops[@]}" 2>/dev/null
    kill_workers_now
    stop_the_rest KILL
    exit 130
}

stop_the_rest() {  # TERM|KILL: the web server, the beat and the repair, then Redis
    [ "$1" = KILL ] || say "stopping the web server, the beat and the repair..."
    [ -z "$web_pid" ] || kill -"$1" -- -"$web_pid" 2>/dev/null
    kill -TERM "${other_loops[@]}" 2>/dev/null
    if ! wait_gone 15 ${web_pid:+"$web_pid"} "${other_loops[@]}"; then
        [ -z "$web_pid" ] || kill -KILL -- -"$web_pid" 2>/dev/null
        kill -USR1 "${other_loops[@]}" 2>/dev/null
    fi
    if [ -n "$redis_pid" ]; then
        say "stopping Redis..."
        # TERM even on a second Ctrl-C: Redis writes its data out in a moment
        kill -TERM "$redis_pid" 2>/dev/null
        wait_gone 30 "$redis_pid" || kill -KILL "$redis_pid" 2>/dev/null
    fi
    say "stopped"
}
trap stop_all INT TERM HUP EXIT

# Each run's logs start empty; the three runs before keep theirs beside them (worker.log.1 is the
# last run's), so that what a stop or a crash wrote is still there after the next `make run`.
keep_previous_log() {  # LOG
    [ -s "$1" ] || return 0
    local n
    for n in 2 1; do
        if [ -e "$1.$n" ]; then mv -f "$1.$n" "$1.$((n + 1))"; fi
    done
    mv -f "$1" "$1.1"
}

# A worker or the beat that dies (killed, out of memory) is started again under the same name: a
# worker that starts re-queues the rows its previous process left running (leaderboard/tasks.py),
# so the evaluation it was running ends once. The loop passes TERM on to its process and ends when
# that process does; USR1 kills the process's whole group at once (a second Ctrl-C). The web server
# and Redis are not restarted: their end ends the stack. The loop's pid is in $! on return.
supervise() {  # NAME LOG COMMAND...
    local name="$1" log="$2"; shift 2
    keep_previous_log "$log"
    : >"$log"
    (
        child="" stopping=""
        # the terminal's signals (Ctrl-C, a closed window) are for run.sh, which stops the loop in turn
        trap '' INT HUP
        trap 'stopping=1; [ -z "$child" ] || kill -TERM "$child" 2>/dev/null || true' TERM
        trap '[ -z "$child" ] || kill -KILL -- -"$child" 2>/dev/null || true; exit 0' USR1
        while [ -z "$stopping" ]; do
            # a session of its own: the terminal's Ctrl-C is for run.sh, which stops it in turn.
            # (setsid runs the command in its own pid here, so $child is also its process group.)
            setsid "$@" >>"$log" 2>&1 &
            child=$!
            # a wait cut short by a trap returns early: wait again while the process runs
            while true; do
                wait "$child" && status=0 || status=$?
                kill -0 "$child" 2>/dev/null || break
            done
            [ -z "$stopping" ] || break
            echo "$(date '+%H:%M:%S') $name exited with status $status; starting it again in 2 s (log: $log)"
            sleep 2
        done
    ) &
}

# --- Redis: use one that answers, else start our own ----------------------------------------
REDIS_URL="${REDIS_URL:-redis://127.0.0.1:6379/0}"
export REDIS_URL
redis_port="$(echo "$REDIS_URL" | sed -E 's#.*:([0-9]+)/?.*#\1#')"
if ! redis-cli -p "$redis_port" ping >/dev/null 2>&1; then
    keep_previous_log var/redis.log
    setsid redis-server --port "$redis_port" --bind 127.0.0.1 --dir "$ROOT/var" --dbfilename redis.rdb \
        --appendonly yes --appenddirname redis-aof >var/redis.log 2>&1 &
    redis_pid=$!
    for _ in $(seq 50); do redis-cli -p "$redis_port" ping >/dev/null 2>&1 && break; sleep 0.1; done
fi

# --- the project's bytecode ------------------------------------------------------------------
# Every evaluation starts a judge in a fresh box, and every command and worker a fresh interpreter;
# where PYTHONDONTWRITEBYTECODE is set (or the box's mounts are read-only) none of them writes the
# project's .pyc, so each compiled its modules again: about 0.2-0.35 s of CPU a process. Only files
# changed since the last run are compiled again.
$PY -m compileall -q -j 0 -x '/solutions/' evaluator leaderboard sandbox >/dev/null || true

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
setsid scripts/web.sh "$HOST" "$PORT" &
web_pid=$!
# the address is said once it answers: a newcomer who opens it at once finds the site, not a refusal
for _ in $(seq 1 300); do
    if ! kill -0 "$web_pid" 2>/dev/null; then
        echo "the web server ended before it answered on http://$HOST:$PORT (is the port taken?)"
        break
    fi
    if (exec 3<>"/dev/tcp/$HOST/$PORT") 2>/dev/null; then break; fi
    sleep 0.2
done
echo "site on http://$HOST:$PORT  (Ctrl-C stops everything)"
# one beat for the whole site, whatever the number of workers: each would otherwise send every job
supervise beat var/beat.log .venv/bin/celery -A leaderboard beat --schedule var/celerybeat-schedule -l INFO
other_loops+=($!)
# the repair of stuck submissions in a process of its own: it must outlive any worker it repairs
supervise repair var/repair.log $PY manage.py requeue_stuck --every "${EVAL_REAPER_INTERVAL_S:-30}"
other_loops+=($!)

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
    worker_loops+=($!)
    echo "worker ${WORKER_NODES[$k]} started on queue $EVAL_QUEUE (log: ${WORKER_LOGS[$k]})"
done
wait -n ${redis_pid:+"$redis_pid"} "$web_pid" "${other_loops[@]}" "${worker_loops[@]}"
