"""Temporary stand-in for `python -m evaluator run` until the real evaluator lands: a root judge
that starts the submission as uid 65534 (no caps, no_new_privs), checks softmax on one input and
writes a schema-1 report. Its runner's output goes into the report's logs."""
import argparse, ctypes, json, os, subprocess, sys, time

p = argparse.ArgumentParser()
p.add_argument("cmd"); p.add_argument("file"); p.add_argument("--task"); p.add_argument("--device")
p.add_argument("--mode"); p.add_argument("--json"); p.add_argument("--time-limit")
a = p.parse_args()


def drop():
    os.setgroups([]); os.setgid(65534); os.setuid(65534)
    ctypes.CDLL(None).prctl(38, 1, 0, 0, 0)


code = """
import runpy, sys, torch
m = runpy.run_path(sys.argv[1])
x = torch.randn(4, 8)
out = m['custom_kernel'](x)
print('STANDIN_OK' if torch.allclose(out, torch.softmax(x, -1)) else 'STANDIN_WRONG')
"""
t = time.time()
with open("/tmp/runner.log", "w+b") as log:
    os.chmod("/tmp/runner.log", 0o600)
    try:
        rc = subprocess.run([sys.executable, "-c", code, a.file], preexec_fn=drop, stdout=log, stderr=log,
                            stdin=subprocess.DEVNULL, timeout=600).returncode
    except Exception as e:
        rc = -1
    log.seek(0, 2); size = log.tell(); log.seek(max(0, size - 60000)); logs = log.read().decode("utf-8", "replace")
ok = rc == 0 and "STANDIN_OK" in logs
codes = [] if ok else (["mismatch"] if "STANDIN_WRONG" in logs else ["crash"])
rep = {"schema": 1, "verdict": "verified" if ok else "rejected", "reasons": list(codes), "reason_codes": codes,
       "task": a.task, "mode": a.mode, "device": a.device, "logs": logs}
with open(a.json, "w") as f:
    json.dump(rep, f)
print("verdict", rep["verdict"])
