#!/usr/bin/env python3
"""Each test module's seconds from a pytest log run with `--durations=0`, as JSON on stdout:
`tests/module_durations.json`, which orders the parallel part of `make test` longest first.

    .venv/bin/python -m pytest -n 4 --part parallel --durations=0 | tee LOG
    python3 scripts/module_durations.py LOG > tests/module_durations.json
"""
import json
import re
import sys
from collections import defaultdict

LINE = re.compile(r"^([0-9.]+)s (?:call|setup|teardown)\s+(tests/\S+?\.py)::")


def main(path: str) -> None:
    seconds = defaultdict(float)
    with open(path) as log:
        for line in log:
            m = LINE.match(line)
            if m:
                seconds[m.group(2)] += float(m.group(1))
    ordered = dict(sorted(((k, round(v)) for k, v in seconds.items() if v >= 1), key=lambda kv: -kv[1]))
    json.dump(ordered, sys.stdout, indent=1)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main(sys.argv[1])
