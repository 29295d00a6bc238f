#!/usr/bin/env bash
# `make test`: real services up, the whole suite, services down.
# The suite runs in two parts (docs/testing.md): first every test not marked `serial`, spread over
# TEST_WORKERS pytest-xdist workers (4 unless set), then the `serial` ones (they read times or
# speedups on this CPU) with nothing else running, one worker per core. Arguments go to both
# parts; the status is the first part's failure, else the second's.
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
# the project's bytecode, once, for the hundreds of interpreters the suite starts (scripts/run.sh
# says why): pytest's workers, judges in boxes, commands, Celery workers
.venv/bin/python -m compileall -q -j 0 -x '/solutions/' evaluator leaderboard sandbox >/dev/null || true

# --durations: the slowest tests of each part at the end of the log, where a slower suite shows why
.venv/bin/python -m pytest -n "${TEST_WORKERS:-4}" --part parallel --durations=20 "$@"
parallel=$?
# The serial part: one worker per core (at most 4), each pinned to its core with all it starts
# (tests/conftest.py), so that no two timed evaluations share one. -n last: a -n among the
# arguments must not put two of them on one core
cores="$(nproc 2>/dev/null || echo 1)"
serial_workers=$(( cores > 4 ? 4 : cores ))
if [ "$serial_workers" -lt 2 ]; then serial_workers=0; fi
.venv/bin/python -m pytest --part serial --durations=10 "$@" -n "$serial_workers"
serial=$?
# 5: that part had no test to run (the arguments chose only tests of the other part)
if [ "$parallel" = 5 ] && [ "$serial" = 5 ]; then exit 5; fi
for status in "$parallel" "$serial"; do
    if [ "$status" != 0 ] && [ "$status" != 5 ]; then exit "$status"; fi
done
exit 0
