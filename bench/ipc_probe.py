"""Can a trusted checker process read a runner's device memory, and how well does a clock outside
both processes time a batch of calls? (The feasibility probe behind the batch timing design.)

Three processes, as in the judge: this one (the clock; root), a runner-like process (uid 65534, in
its own PID and mount namespace when asked, as evaluator/runner/harness.py makes itself) and a checker-like
process (uid 65534, outside that namespace, non-dumpable). The checker exports an input buffer the
runner maps; the runner exports its outputs, the checker maps them and reads every byte.

  1. IPC both ways, with and without the runner's PID namespace: does each side see the other's
     bytes; what exporting and mapping cost.
  2. softmax 8192x8192 fp32, eager against torch.compile: K calls back to back on K distinct
     inputs, timed from `go` to the checker's reply; 15 interleaved pairs; against CUDA events
     per call (flushed) inside the runner.

    python bench/ipc_probe.py OUTDIR
"""
from __future__ import annotations

import json
import os
import signal
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from evaluator.wire import channel
from evaluator.wire import isolation  # noqa: E402

M = N = 8192
K = 64
PAIRS = 15


# ---- the two child roles ----------------------------------------------------------------------

def child(role: str, ns: bool, in_fd: int, out_fd: int) -> None:
    if os.geteuid() == 0:
        if ns:
            isolation.enter_pid_namespace(child_fds=(in_fd, out_fd))
        needed = [sys.prefix, sys.base_prefix, sys.exec_prefix, isolation.PACKAGE_ROOT,
                  *[d for d in sys.path if d and os.path.isdir(d)]]
        isolation.drop_privileges(65534, 65534, needed)
    if role == "checker":
        isolation.make_undumpable()
    home = f"/tmp/ipc-probe-{role}-{os.getpid()}"
    os.makedirs(home, exist_ok=True)
    os.environ.update(HOME=home, TRITON_CACHE_DIR=home + "/triton", TORCHINDUCTOR_CACHE_DIR=home + "/inductor")
    os.chdir(home)
    import torch

    from evaluator.wire import ipc

    torch.cuda.init()
    torch.ones(1, device="cuda").sum().item()
    mapper = ipc.Mapper()
    state = {}
    send = lambda **m: channel.send(out_fd, m)  # noqa: E731
    send(t="hello", uid=os.getuid(), pid=os.getpid())
    while True:
        msg = channel.recv(in_fd)
        op = msg.get("op")
        try:
            if op == "exit":
                return
            handler = globals()[f"{role}_{op}"]
            t = time.perf_counter()
            reply = handler(torch, ipc, mapper, state, msg)
            reply["host_ms"] = (time.perf_counter() - t) * 1e3
            send(t="ok", **reply)
        except Exception as e:  # noqa: BLE001
            send(t="error", message=f"{type(e).__name__}: {e}"[:2000])


def checker_alloc(torch, ipc, mapper, state, msg):
    buf = torch.empty(msg["nbytes"], dtype=torch.uint8, device="cuda")
    state["inputs"] = buf
    t = time.perf_counter()
    desc = ipc.export(buf)
    return {"desc": desc, "export_ms": (time.perf_counter() - t) * 1e3}


def checker_fill(torch, ipc, mapper, state, msg):
    g = torch.Generator(device="cuda")
    g.manual_seed(msg["seed"])
    x = state["inputs"].view(torch.float32)
    x.normal_(generator=g)
    torch.cuda.synchronize()
    return {"sum": float(x[: 1 << 20].double().sum())}


def _fp(torch, t):
    return int(t.view(torch.int32).sum(dtype=torch.int64))


def checker_fp(torch, ipc, mapper, state, msg):
    before = mapper.opened
    sums = [_fp(torch, mapper.bytes_view(d, msg["nbytes"])) for d in msg["outputs"]]
    torch.cuda.synchronize()
    return {"sums": sums, "opened": mapper.opened - before}


def runner_open(torch, ipc, mapper, state, msg):
    t = time.perf_counter()
    raw = mapper.bytes_view(msg["desc"], msg["nbytes"])
    open_ms = (time.perf_counter() - t) * 1e3
    per = msg["per_bytes"]
    state["inputs"] = [raw[i * per:(i + 1) * per].view(torch.float32).view(msg["m"], msg["n"])
                       for i in range(msg["k"])]
    return {"open_ms": open_ms, "sum": float(raw.view(torch.float32)[: 1 << 20].double().sum())}


def runner_roundtrip(torch, ipc, mapper, state, msg):
    out = state["inputs"][0] * 2
    torch.cuda.synchronize()
    t = time.perf_counter()
    desc = ipc.export(out)
    state["keep"] = out
    return {"desc": desc, "export_ms": (time.perf_counter() - t) * 1e3, "fp": _fp(torch, out)}


def runner_compile(torch, ipc, mapper, state, msg):
    eager = lambda x: torch.softmax(x, dim=-1)  # noqa: E731
    state["fns"] = {"eager": eager, "compile": torch.compile(eager, dynamic=False)}
    for fn in state["fns"].values():
        fn(state["inputs"][0])
    torch.cuda.synchronize()
    state["flush"] = torch.empty(256 << 20, dtype=torch.uint8, device="cuda")
    return {}


def runner_go(torch, ipc, mapper, state, msg):
    fn = state["fns"][msg["fn"]]
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    outs = [fn(x) for x in state["inputs"]]
    end.record()
    torch.cuda.synchronize()
    t = time.perf_counter()
    descs = [ipc.export(o) for o in outs]
    state["keep"] = outs
    return {"outputs": descs, "nbytes": outs[0].numel() * 4, "event_ms": start.elapsed_time(end),
            "export_ms": (time.perf_counter() - t) * 1e3}


def runner_events(torch, ipc, mapper, state, msg):
    fn = state["fns"][msg["fn"]]
    times = []
    for i in range(20):
        state["flush"].zero_()
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        s.record()
        fn(state["inputs"][i % len(state["inputs"])])
        e.record()
        e.synchronize()
        times.append(s.elapsed_time(e))
    return {"median_ms": statistics.median(times)}


# ---- the clock ----------------------------------------------------------------------------------

class Proc:
    def __init__(self, role: str, ns: bool):
        a_r, self.to = os.pipe()
        self.frm, b_w = os.pipe()
        self.p = subprocess.Popen([sys.executable, "-P", "-s", __file__, "--child", role, str(int(ns)),
                                   str(a_r), str(b_w)], pass_fds=(a_r, b_w), start_new_session=True,
                                  env={**os.environ, "PYTHONPATH": str(ROOT)})
        os.close(a_r)
        os.close(b_w)
        self.hello = self.recv(120)

    def send(self, **m):
        channel.send(self.to, m)

    def recv(self, timeout=120):
        return channel.recv(self.frm, time.monotonic() + timeout)

    def call(self, timeout=300, **m):
        self.send(**m)
        reply = self.recv(timeout)
        if reply.get("t") != "ok":
            raise RuntimeError(f"{m.get('op')}: {reply}")
        return reply

    def stop(self):
        os.killpg(self.p.pid, signal.SIGSTOP)

    def cont(self):
        os.killpg(self.p.pid, signal.SIGCONT)

    def close(self):
        try:
            self.send(op="exit")
        except OSError:
            pass
        try:
            self.p.wait(10)
        except subprocess.TimeoutExpired:
            self.p.kill()


def roundtrip(ns: bool) -> dict:
    out = {"ns": ns}
    checker, runner = Proc("checker", False), Proc("runner", ns)
    try:
        out["uids"] = [checker.hello.get("uid"), runner.hello.get("uid")]
        per = 4 << 20
        a = checker.call(op="alloc", nbytes=2 * per)
        f = checker.call(op="fill", seed=1)
        o = runner.call(op="open", desc=a["desc"], nbytes=2 * per, per_bytes=per, k=2, m=1024, n=1024)
        out["runner_sees_inputs"] = abs(o["sum"] - f["sum"]) < 1e-6 * max(1.0, abs(f["sum"]))
        r = runner.call(op="roundtrip")
        c = checker.call(op="fp", outputs=[r["desc"]], nbytes=per)
        out["checker_sees_outputs"] = c["sums"][0] == r["fp"]
        out["export_ms"] = r["export_ms"]
        out["open_ms"] = o["open_ms"]
    except Exception as e:  # noqa: BLE001
        out["error"] = str(e)[:1000]
    finally:
        checker.close()
        runner.close()
    return out


def timing(ns: bool) -> dict:
    checker, runner = Proc("checker", False), Proc("runner", ns)
    per = M * N * 4
    rows = []
    try:
        a = checker.call(op="alloc", nbytes=K * per)
        runner.call(op="open", desc=a["desc"], nbytes=K * per, per_bytes=per, k=K, m=M, n=N)
        runner.call(op="compile", timeout=600)
        events = {fn: runner.call(op="events", fn=fn)["median_ms"] for fn in ("eager", "compile")}

        def batch(fn, seed):
            runner.stop()
            checker.call(op="fill", seed=seed)
            t0 = time.perf_counter()
            runner.send(op="go", fn=fn)
            runner.cont()
            done = runner.recv()
            t1 = time.perf_counter()
            runner.stop()
            t2 = time.perf_counter()
            c = checker.call(op="fp", outputs=done["outputs"], nbytes=done["nbytes"])
            t3 = time.perf_counter()
            runner.cont()
            return {"fn": fn, "window_ms": (t3 - t0) * 1e3, "go_done_ms": (t1 - t0) * 1e3,
                    "stop_ms": (t2 - t1) * 1e3, "check_ms": (t3 - t2) * 1e3, "event_ms": done["event_ms"],
                    "export_ms": done["export_ms"], "checker_host_ms": c["host_ms"], "opened": c["opened"]}

        for w in range(2):
            batch("eager", 100 + w)
            batch("compile", 200 + w)
        for i in range(PAIRS):
            order = ("eager", "compile") if i % 2 == 0 else ("compile", "eager")
            for fn in order:
                rows.append(batch(fn, 1000 + 2 * i + (fn == "compile")))
    finally:
        checker.close()
        runner.close()
    med = {fn: {key: statistics.median(r[key] for r in rows if r["fn"] == fn)
                for key in ("window_ms", "go_done_ms", "stop_ms", "check_ms", "event_ms", "export_ms")}
           for fn in ("eager", "compile")}
    ratios = [e["window_ms"] / c["window_ms"] for e, c in zip([r for r in rows if r["fn"] == "eager"],
                                                              [r for r in rows if r["fn"] == "compile"])]
    return {"ns": ns, "K": K, "events_per_call_ms": events, "medians": med, "rows": rows,
            "eager_over_compile_window": statistics.median(ratios),
            "ratio_spread": (max(ratios) - min(ratios)) / statistics.median(ratios),
            "eager_over_compile_events": events["eager"] / events["compile"]}


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "--child":
        child(sys.argv[2], sys.argv[3] == "1", int(sys.argv[4]), int(sys.argv[5]))
        return
    outdir = Path(sys.argv[1] if len(sys.argv) > 1 else ".")
    outdir.mkdir(parents=True, exist_ok=True)
    result = {"roundtrip": [roundtrip(False), roundtrip(True)]}
    for r in result["roundtrip"]:
        print("roundtrip", json.dumps(r), flush=True)
    ns = bool(result["roundtrip"][1].get("checker_sees_outputs"))
    try:
        result["timing"] = timing(ns)
        t = result["timing"]
        print("timing ns", ns, "K", K, "events/call", t["events_per_call_ms"], flush=True)
        for fn, m in t["medians"].items():
            print(fn, {k: round(v, 4) for k, v in m.items()}, flush=True)
        print("eager/compile window", round(t["eager_over_compile_window"], 4), "spread",
              round(t["ratio_spread"], 4), "events", round(t["eager_over_compile_events"], 4))
    except Exception as e:  # noqa: BLE001
        result["timing_error"] = str(e)[:2000]
        print("timing error", e)
    (outdir / "ipc_probe.json").write_text(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
