"""The judge hands files and directories to processes of another user (the runner is uid 65534
when the judge is root). Their modes are set explicitly, so an evaluation started under the
owner-only umask that `make run` uses (077) verifies as one under 022 does."""
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
EXAMPLE = ROOT / "examples" / "softmax.py"

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="the runner is another user only under a root judge")


def run_under_umask(mode: str, tmp_path: Path) -> dict:
    out = tmp_path / f"{mode}.json"
    env = {**os.environ, "PYTHONPATH": str(ROOT), "EVALUATOR_QUICK": "1"}
    p = subprocess.run([sys.executable, "-m", "evaluator", "run", str(EXAMPLE), "--task", "softmax",
                        "--device", "cpu", "--mode", mode, "--json", str(out)],
                       capture_output=True, text=True, env=env, cwd=ROOT, timeout=600,
                       preexec_fn=lambda: os.umask(0o077))
    assert p.returncode == 0, p.stderr[-3000:]
    return json.loads(out.read_text())


def test_a_ranked_run_under_umask_077_verifies(tmp_path):
    report = run_under_umask("ranked", tmp_path)
    assert report["verdict"] == "verified", (report["reasons"], report["logs"][-2000:])
    assert report["shapes"] and all(s["candidate_ms"] for s in report["shapes"])

