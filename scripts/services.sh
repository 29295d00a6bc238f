#!/usr/bin/env bash
# Start or stop the real services the test suite uses: PostgreSQL, Redis and a Docker engine.
# Usage: scripts/services.sh start|stop|env
# Installs missing Debian packages when run as root; otherwise says what to install and fails.
# Everything lives under var/services/ so that nothing touches a system-wide instance.
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

start_pg() {
    # a server already answering on the port (another checkout's) is used as it is
    if "$(pg_bin)/pg_isready" -q -h 127.0.0.1 -p "$PG_PORT"; then return; fi
    local bin; bin="$(pg_bin)"
    local data="$SVC/pg"
    if [ ! -f "$data/PG_VERSION" ]; then
        mkdir -p "$data"; chown postgres:postgres "$data" 2>/dev/null || true
        as_pg "$bin/initdb" -D "$data" -A trust -U postgres >/dev/null
    fi
    if ! as_pg "$bin/pg_ctl" -D "$data" status >/dev/null 2>&1; then
        as_pg "$bin/pg_ctl" -D "$data" -l "$data/server.log" -w \
            -o "-p $PG_PORT -k /tmp -c listen_addresses=127.0.0.1 -c fsync=off -c max_connections=200" start >/dev/null
    fi
}
stop_pg() { [ -d "$SVC/pg" ] && as_pg "$(pg_bin)/pg_ctl" -D "$SVC/pg" -m fast stop >/dev/null 2>&1 || true; }
as_pg() { if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi; }

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

case "${1:-}" in
    start) need_packages; start_pg; start_redis; start_docker; print_env ;;
    stop) stop_redis; stop_pg; stop_docker ;;
    env) print_env ;;
    *) echo "usage: $0 start|stop|env" >&2; exit 2 ;;
esac
