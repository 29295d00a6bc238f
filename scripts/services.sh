#!/usr/bin/env bash
# Start or stop the real services the test suite uses: PostgreSQL, Redis and a Docker engine.
# Usage: scripts/services.sh start|stop [pg|redis|docker ...]   (all three unless named)
#        scripts/services.sh env
# Installs missing Debian packages when run as root; otherwise says what to install and fails.
# Everything lives under var/services/ so that nothing touches a system-wide instance, except
# PostgreSQL's data in a checkout its user cannot enter (start_pg): a private directory of that
# user's under /var/tmp, named in var/services/pg-elsewhere and removed by `stop`.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
SVC="$ROOT/var/services"
PG_PORT="${TEST_PG_PORT:-5433}"
REDIS_PORT="${TEST_REDIS_PORT:-6380}"
# the database and Redis number the suite uses, so that two checkouts can share the services
PG_DB="${TEST_PG_DB:-postgres}"
REDIS_DB="${TEST_REDIS_DB:-0}"
mkdir -p "$SVC"
# PostgreSQL runs as its own user (as root: user postgres) and must traverse var/ and var/services/
# to its data directory, whatever mode a umask (`make run` uses 077) or an earlier run gave them
chmod 0711 "$ROOT/var" "$SVC"

need_packages() {
    local missing=()
    command -v pg_ctlcluster >/dev/null || [ -d /usr/lib/postgresql ] || missing+=(postgresql)
    command -v redis-server >/dev/null || missing+=(redis-server)
    command -v dockerd >/dev/null || missing+=(docker.io)
    command -v bwrap >/dev/null || missing+=(bubblewrap)
    command -v chromium >/dev/null || missing+=(chromium)
    if [ ${#missing[@]} -gt 0 ]; then
        if [ "$(id -u)" = 0 ]; then
            apt-get update -qq
            DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
        else
            echo "missing packages; run: sudo apt-get install ${missing[*]}" >&2
            exit 1
        fi
    fi
}

pg_bin() { ls -d /usr/lib/postgresql/*/bin | sort -V | tail -1; }

# the data directory start_pg uses: var/services/pg when PostgreSQL's user can reach it. As root
# in a checkout under a directory other users cannot enter (root's 0700 home), it cannot, so the
# data goes to a fresh directory under /var/tmp that only that user can enter, and
# var/services/pg-elsewhere names it for `stop`, which stops the server there and removes it.
PG_ELSEWHERE="$SVC/pg-elsewhere"
elsewhere_ok() { [[ "$1" =~ ^/var/tmp/leaderboard-test-pg\.[A-Za-z0-9]{8}$ ]]; }
choose_pg_data() {  # sets PG_DATA
    if [ -f "$PG_ELSEWHERE" ]; then
        PG_DATA="$(cat "$PG_ELSEWHERE")"
        if elsewhere_ok "$PG_DATA" && [ -d "$PG_DATA" ] && [ ! -L "$PG_DATA" ]; then return; fi
        rm -f "$PG_ELSEWHERE"
    fi
    PG_DATA="$SVC/pg"
    if as_pg test -x "$SVC"; then return; fi
    PG_DATA="$(mktemp -d /var/tmp/leaderboard-test-pg.XXXXXXXX)"
    echo "$PG_DATA" >"$PG_ELSEWHERE"
    if [ "$(id -u)" = 0 ]; then chown postgres:postgres "$PG_DATA"; fi
    echo "PostgreSQL's user cannot enter $SVC: its data is in $PG_DATA until 'scripts/services.sh stop'" >&2
}

start_pg() {
    # a server already answering on the port (another checkout's) is used as it is
    if "$(pg_bin)/pg_isready" -q -h 127.0.0.1 -p "$PG_PORT"; then return; fi
    local bin; bin="$(pg_bin)"
    choose_pg_data
    local data="$PG_DATA"
    if [ ! -f "$data/PG_VERSION" ]; then
        mkdir -p "$data"; chown postgres:postgres "$data" 2>/dev/null || true
        as_pg "$bin/initdb" -D "$data" -A trust -U postgres >/dev/null
    fi
    if ! as_pg "$bin/pg_ctl" -D "$data" status >/dev/null 2>&1; then
        as_pg "$bin/pg_ctl" -D "$data" -l "$data/server.log" -w \
            -o "-p $PG_PORT -k /tmp -c listen_addresses=127.0.0.1 -c fsync=off -c max_connections=200" start >/dev/null
    fi
}
stop_pg_in() {  # DATA: its server stopped, however it was left (a fast stop, else immediate, else killed)
    local bin; bin="$(pg_bin 2>/dev/null)" || bin=/nonexistent
    as_pg "$bin/pg_ctl" -D "$1" -m fast stop >/dev/null 2>&1 && return
    as_pg "$bin/pg_ctl" -D "$1" -m immediate stop >/dev/null 2>&1 && return
    local pid; pid="$(head -1 "$1/postmaster.pid" 2>/dev/null)" || return 0
    if [[ "$pid" =~ ^[0-9]+$ ]] && kill -0 "$pid" 2>/dev/null; then
        kill -KILL "$pid" 2>/dev/null || true
        for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    fi
}
stop_pg() {
    if [ -d "$SVC/pg" ]; then stop_pg_in "$SVC/pg"; fi
    if [ -f "$PG_ELSEWHERE" ]; then
        local dir; dir="$(cat "$PG_ELSEWHERE")"
        if elsewhere_ok "$dir" && [ -d "$dir" ] && [ ! -L "$dir" ]; then
            stop_pg_in "$dir"
            rm -rf -- "$dir"
        fi
        rm -f "$PG_ELSEWHERE"
    fi
}
# as root, PostgreSQL's own user, from / (a checkout it cannot enter is no working directory)
as_pg() { if [ "$(id -u)" = 0 ]; then (cd / && runuser -u postgres -- "$@"); else "$@"; fi; }

start_redis() {
    if ! redis-cli -p "$REDIS_PORT" ping >/dev/null 2>&1; then
        redis-server --port "$REDIS_PORT" --bind 127.0.0.1 --save "" --appendonly no \
            --daemonize yes --pidfile "$SVC/redis.pid" --logfile "$SVC/redis.log"
        for _ in $(seq 50); do redis-cli -p "$REDIS_PORT" ping >/dev/null 2>&1 && break; sleep 0.1; done
    fi
}
stop_redis() { redis-cli -p "$REDIS_PORT" shutdown nosave >/dev/null 2>&1 || true; }

start_docker() {
    if docker info >/dev/null 2>&1; then return; fi
    if [ "$(id -u)" != 0 ]; then echo "no Docker engine answers and only root can start one" >&2; return 1; fi
    setsid dockerd >"$SVC/dockerd.log" 2>&1 < /dev/null &
    echo $! > "$SVC/dockerd.pid"
    for _ in $(seq 100); do docker info >/dev/null 2>&1 && return; sleep 0.2; done
    echo "dockerd did not start; see $SVC/dockerd.log" >&2; return 1
}
stop_docker() {
    if [ -f "$SVC/dockerd.pid" ]; then
        local pid; pid="$(cat "$SVC/dockerd.pid")"
        kill "$pid" 2>/dev/null || true
        # a start right after a stop must not find the old daemon's pid file
        for _ in $(seq 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.2; done
        if kill -0 "$pid" 2>/dev/null; then kill -9 "$pid" 2>/dev/null || true; sleep 1; fi
        rm -f "$SVC/dockerd.pid"
    fi
}

print_env() {
    echo "export DATABASE_URL=postgres://postgres@127.0.0.1:$PG_PORT/$PG_DB"
    echo "export REDIS_URL=redis://127.0.0.1:$REDIS_PORT/$REDIS_DB"
}

action="${1:-}"
services=("${@:2}")
if [ ${#services[@]} = 0 ]; then services=(pg redis docker); fi
for name in "${services[@]}"; do
    case "$name" in pg|redis|docker) ;; *) echo "unknown service: $name (pg, redis or docker)" >&2; exit 2 ;; esac
done
wanted() { [[ " ${services[*]} " == *" $1 "* ]]; }
case "$action" in
    start)
        need_packages
        if wanted pg; then start_pg; fi
        if wanted redis; then start_redis; fi
        if wanted docker; then start_docker; fi
        print_env ;;
    stop)
        if wanted redis; then stop_redis; fi
        if wanted pg; then stop_pg; fi
        if wanted docker; then stop_docker; fi ;;
    env) print_env ;;
    *) echo "usage: $0 start|stop [pg|redis|docker ...] | env" >&2; exit 2 ;;
esac
