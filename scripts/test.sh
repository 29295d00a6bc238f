#!/usr/bin/env bash
# `make test`: real services up, the whole suite, services down.
set -uo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
cd "$ROOT"
started_here=0
cleanup() { if [ "$started_here" = 1 ]; then scripts/services.sh stop; fi; }
trap cleanup EXIT
# Leave services alone that were already up (a developer's running stack); stop what we start.
if ! redis-cli -p "${TEST_REDIS_PORT:-6380}" ping >/dev/null 2>&1; then started_here=1; fi
env_lines="$(scripts/services.sh start)" || { echo "could not start the test services" >&2; exit 1; }
eval "$env_lines"
export PYTHONUNBUFFERED=1 EVALUATOR_QUICK=1
.venv/bin/python -m pytest "$@"
