"""compute-sanitizer in a PID namespace of its own, as the judge starts it beside the correctness
phase (evaluator/judge/sanitize.py, `contain`). Results in docs/bench/judge-clock.md (Wall time).

    python bench/sanitizer_contain.py OUTDIR

Runs memcheck on examples/softmax.py's smallest test shape three ways at once, as root: plainly as
uid 65534 (the after-the-verdict path), in a namespace whose init is the judge's small reaper, and
in a namespace whose init is the tool itself; each with a limit, printing how long it took and the
end of its output. Then racecheck for the reaper, and memcheck again while another process that
holds a context on the device is stopped (SIGSTOP), as the judge stops its runners.
OUTDIR/contain.json has the rows. BENCH_STOPPED_ONLY=1: only the last two.
"""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from evaluator.judge import sanitize  # noqa: E402

LIMIT_S = float(os.environ.get("BENCH_LIMIT_S", "120"))


def one(label: str, tool: str, how: str) -> dict:
    source = (ROOT / "examples" / "softmax.py").read_bytes()
    sanitizer = sanitize.find_sanitizer()
    # "exec": the same wrapper, with the tool itself as the namespace's init
    run = sanitize.Run(tool, sanitizer, source, task="softmax", shape=sanitize.smallest_shape("softmax"), seed=1,
                       contained=how != "plain", wrapper_flags=("--exec",) if how == "exec" else ())
    got = run.finish(LIMIT_S)
    ended = got is not None or run.uncontained
    row = {"label": label, "ended": ended, "rc": run.proc.returncode if ended else None,
           "seconds": round(time.monotonic() - run.started, 1), "tail": run.tail}
    print(f"{label:28s} ended={ended} rc={row['rc']} {row['seconds']:6.1f}s  {run.tail[-300:]!r}", flush=True)
    return row


def main():
    out = Path(sys.argv[1])
    out.mkdir(parents=True, exist_ok=True)
    print("compute-sanitizer:", sanitize.find_sanitizer(), flush=True)
    plan = [("memcheck plain", "memcheck", "plain"), ("memcheck reaper init", "memcheck", "reaper"),
            ("memcheck tool as init", "memcheck", "exec")]
    rows = []
    if os.environ.get("BENCH_STOPPED_ONLY") != "1":
        with ThreadPoolExecutor(len(plan)) as pool:
            rows = list(pool.map(lambda p: one(*p), plan))
        rows.append(one("racecheck reaper init", "racecheck", "reaper"))
    holder = subprocess.Popen([sys.executable, "-c", "import time, torch; torch.zeros(1, device='cuda'); "
                               "torch.cuda.synchronize(); print('ready', flush=True); time.sleep(600)"],
                              stdout=subprocess.PIPE, text=True)
    holder.stdout.readline()
    os.kill(holder.pid, signal.SIGSTOP)
    try:
        rows.append(one("memcheck, a context stopped", "memcheck", "reaper"))
    finally:
        holder.kill()
        holder.wait()
    rows.append(one("memcheck after it", "memcheck", "reaper"))
    (out / "contain.json").write_text(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main()
