#!/usr/bin/env python3
"""Each test module's seconds in each part of `make test`, from its log run with `--durations=0`,
as JSON on stdout: `tests/module_durations.json`, by which both parts hand out modules longest
first (tests/conftest.py).

    make test PYTEST_ARGS=--durations=0 | tee LOG
    python3 scripts/module_durations.py LOG > tests/module_durations.json

The log holds two tables of durations, the parallel part's and then the serial part's
(scripts/test.sh runs them in that order); a module with tests in both has a row in each.
"""
import json
import re
import sys
from collections import defaultdict

LINE = re.compile(r"^([0-9.]+)s (?:call|setup|teardown)\s+(tests/\S+?\.py)::")
TABLE = re.compile(r"^=+ slowest .*durations =+$")
PARTS = ("parallel", "serial")


def main(path: str) -> None:
    seconds = {part: defaultdict(float) for part in PARTS}
    tables = 0
    with open(path) as log:
        for line in log:
            if TABLE.match(line.strip()):
                tables += 1
                continue
            m = LINE.match(line)
            if m and 1 <= tables <= len(PARTS):
                seconds[PARTS[tables - 1]][m.group(2)] += float(m.group(1))
    if tables != len(PARTS):
        sys.exit(f"{path}: {tables} tables of durations, not one per part: a log of `make test`?")
    ordered = {part: dict(sorted(((k, round(v)) for k, v in seconds[part].items() if v >= 1),
                                 key=lambda kv: -kv[1]))
               for part in PARTS}
    json.dump(ordered, sys.stdout, indent=1)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main(sys.argv[1])
