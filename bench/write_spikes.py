"""What the checker's slow writes are, and the per-batch records of honest and hostile ranked
evaluations for the CPU tests that replay them (tests/evaluator/judge/test_judge_touched_replay.py).

    python bench/write_spikes.py OUT [step ...]      steps: keys examples hostile (default: all)

keys      the checker's keyed fingerprint kernel (evaluator/common/_verify.py keyed_sum), in fresh
          processes with an empty Triton cache and then a warm one: the first launch of each of
          the four cases of its two key halves (divisible by 16 or not), with Triton left to
          specialize on them and with `do_not_specialize`, ms each. A case met for the first time
          inside a fill compiles there, and the fill's time is the checker's write reading.
examples  `python -m evaluator run --device cuda --mode ranked` on the five examples, with
          EVALUATOR_SAMPLES_DIR=OUT/records/<task> (the sanitizer off: it runs after timing and
          touches no reading); each report to OUT/records/<task>-report.json.
hostile   the GPU cases of tests/exploits test_work_left_running_moves_no_score (HOSTILE_K, a
          pytest -k expression, default all four), with their samples under OUT/records/hostile,
          stopped where the call's time runs out (DEADLINE_S after the start, default 570 s).
Ends with bench/probe_spread.py over every record folder, and OUT/records packed as
OUT/records.tgz (the device tool returns at most 8 files).
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DEADLINE = time.monotonic() + float(os.environ.get("DEADLINE_S", "570"))
TASKS = ("softmax", "layernorm", "gelu_bias_residual", "matmul_bias_relu", "transformer_block")

KEYS_CHILD = r"""
import json, sys, time, torch, triton
from evaluator.common import _verify
spec = sys.argv[1] == "specialize"
fn = triton.jit(_verify.keyed_sum.fn) if spec else _verify.keyed_sum
words = torch.randint(-2**31, 2**31 - 1, (1 << 24,), dtype=torch.int32, device="cuda")
grid = (words.numel() + 4095) // 4096
partial = torch.zeros(grid, dtype=torch.int64, device="cuda")
out = []
# k1, k2 below 2**32, passed above it as fastcheck.fingerprint does: 17 = not divisible by 16
for k1, k2 in [(17, 17), (17, 17 + 1), (16, 17), (17, 16), (16, 16), (32, 48), (17, 33)]:
    torch.cuda.synchronize()
    t = time.perf_counter()
    fn[(grid,)](words, words.numel(), k1 + (1 << 32), k2 + (1 << 32), partial, BLOCK=4096)
    torch.cuda.synchronize()
    out.append({"k1_div16": k1 % 16 == 0, "k2_div16": k2 % 16 == 0, "ms": (time.perf_counter() - t) * 1e3})
print(json.dumps(out))
"""


def keys(out: Path) -> dict:
    result = {}
    for how in ("specialize", "do_not_specialize"):
        with tempfile.TemporaryDirectory() as cache:
            env = {**os.environ, "TRITON_CACHE_DIR": cache}
            for temp in ("cold", "warm"):
                got = subprocess.run([sys.executable, "-c", KEYS_CHILD, how], cwd=ROOT, env=env,
                                     capture_output=True, text=True, timeout=300)
                rows = json.loads(got.stdout.strip().splitlines()[-1]) if got.returncode == 0 else got.stderr[-2000:]
                result[f"{how}/{temp}"] = rows
                if isinstance(rows, list):
                    print(f"keys {how:18} {temp} cache: " + "  ".join(
                        f"{int(r['k1_div16'])}{int(r['k2_div16'])}:{r['ms']:.3g}" for r in rows))
                else:
                    print(f"keys {how} {temp}: failed\n{rows}")
    (out / "keys.json").write_text(json.dumps(result, indent=1))
    return result


def examples(out: Path) -> None:
    records = out / "records"
    for task in TASKS:
        t = time.monotonic()
        env = {**os.environ, "EVALUATOR_SAMPLES_DIR": str(records / task), "EVALUATOR_SANITIZE": "0"}
        subprocess.run([sys.executable, "-m", "evaluator", "run", f"examples/{task}.py", "--task", task,
                        "--device", "cuda", "--mode", "ranked", "--json", str(records / f"{task}-report.json")],
                       cwd=ROOT, env=env, capture_output=True, text=True, timeout=400)
        report = _load(records / f"{task}-report.json")
        print(f"{task:20} {report.get('verdict')} vs compile {report.get('speedup_vs_compile')} "
              f"codes {report.get('reason_codes')} in {time.monotonic() - t:.0f} s")
        for r in report.get("reasons", []):
            print("   ", r[:400])


def hostile(out: Path) -> None:
    records = out / "records" / "hostile"
    env = {**os.environ, "EVALUATOR_SAMPLES_DIR": str(records), "EXPLOITS_RESULTS": str(out / "records" / "hostile.jsonl")}
    k = os.environ.get("HOSTILE_K", "work_left_running_moves_no_score")
    try:
        got = subprocess.run([sys.executable, "-m", "pytest", "tests/exploits", "-q", "-p", "no:cacheprovider", "-m", "gpu",
                              "-k", k], cwd=ROOT, env=env, capture_output=True, text=True,
                             timeout=max(DEADLINE - time.monotonic(), 1))
    except subprocess.TimeoutExpired as e:
        got = subprocess.CompletedProcess(e.cmd, -9, _text(e.stdout), _text(e.stderr) + "\n(stopped at the deadline)")
    (out / "records" / "hostile-pytest.log").write_text(got.stdout + got.stderr)
    print("\n".join((got.stdout + got.stderr).splitlines()[-25:]))


def _text(data) -> str:
    return data.decode(errors="replace") if isinstance(data, bytes) else (data or "")


def _load(path: Path) -> dict:
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return {}


def main(argv: list[str]) -> int:
    if not argv:
        print(__doc__)
        return 2
    out = Path(argv[0])
    (out / "records").mkdir(parents=True, exist_ok=True)
    steps = argv[1:] or ["keys", "examples", "hostile"]
    try:
        for step in steps:
            print(f"=== {step} ===", flush=True)
            {"keys": keys, "examples": examples, "hostile": hostile}[step](out)
    finally:
        folders = [str(p) for p in sorted((out / "records").iterdir()) if p.is_dir()]
        if folders:
            spread = subprocess.run([sys.executable, "bench/probe_spread.py", *folders], cwd=ROOT,
                                    capture_output=True, text=True)
            (out / "records" / "probe_spread.txt").write_text(spread.stdout + spread.stderr)
            print("\n".join(spread.stdout.splitlines()[-8:]))
        with tarfile.open(out / "records.tgz", "w:gz") as tar:
            tar.add(out / "records", arcname="records")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
