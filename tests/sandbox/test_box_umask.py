"""The box under the owner-only umask that `make run` sets (077): inside bubblewrap the judge holds
no DAC override, so what the runner's user writes for it (the profiled child's output) and what it
writes for the runner (the CPU inputs file) must carry their modes explicitly. Docker's containers
start with umask 022 whatever the worker's, so only bubblewrap meets this."""
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "softmax.py"

pytestmark = pytest.mark.slow


@pytest.mark.parametrize("mode", ["ranked", "profile"])
def test_the_readme_example_verifies_in_the_bubblewrap_box_under_umask_077(mode, tmp_path, require_bwrap):
    out = tmp_path / "report.json"
    env = {k: v for k, v in os.environ.items() if not k.startswith("SANDBOX_")}
    env.update(PYTHONPATH=str(ROOT), EVALUATOR_QUICK="1")
    p = subprocess.run([sys.executable, "-m", "sandbox", "run", str(EXAMPLE), "--task", "softmax", "--mode", mode,
                        "--device", "cpu", "--backend", "bwrap", "--json", str(out)],
                       capture_output=True, text=True, env=env, cwd=ROOT, timeout=600,
                       preexec_fn=lambda: os.umask(0o077))
    assert p.returncode == 0, p.stderr[-3000:]
    report = json.loads(out.read_text())
    assert report["verdict"] == "verified", (report["reasons"], report["logs"][-2000:])
    if mode == "profile":
        assert report["profile"]
    else:
        assert report["shapes"] and all(s["candidate_ms"] for s in report["shapes"])
