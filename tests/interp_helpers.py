"""Scripts run under Triton's interpreter in a child process: TRITON_INTERPRET is read when
triton is first imported, so it cannot be switched on inside the test's own process."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def interpreted(script: str) -> dict:
    """Runs `script` with the interpreter on; returns the JSON object on its last line of output."""
    env = dict(os.environ, TRITON_INTERPRET="1", PYTHONPATH=str(ROOT))
    done = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=300,
                          check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])
