"""The runners' zygote: a process that imports torch and Triton once and forks a runner for each
request, so that a runner starts in a fraction of a second instead of importing torch afresh
(about 2 s of CPU on a laptop core, for every evaluation).

    python -P -s -m evaluator.runner.zygote --fd N

It is started by the judge (judge/zygote_client.py) from a fresh interpreter, with the start-time
environment every runner it serves shares (the malloc settings, OMP_NUM_THREADS, TRITON_INTERPRET,
PYTHONPATH): it holds nothing of the judge's, no seed, no task, no submission, and imports none.
A forked runner is the runner a fresh `python -m evaluator.runner.harness` would be: a session of
its own, the request's descriptors at the numbers its arguments name and no other, the request's
environment, then `harness.main`, which drops privileges and enters its PID namespace as always.
The zygote's end of the judge's socket is closed before anything else in the child, so the
submission never holds a way to ask the zygote for a process.

Over the socket (SOCK_SEQPACKET, one JSON object a packet, descriptors as SCM_RIGHTS):
    zygote -> judge  {"t": "ready"} once torch is imported
    judge -> zygote  {"id", "args", "env", "cwd", "fds": [target numbers]} + one descriptor each
    zygote -> judge  {"t": "started", "id", "pid"} | {"t": "failed", "id", "error"}
    zygote -> judge  {"t": "exit", "pid", "code"} when a runner ends (Popen's returncode)
The zygote ends when the judge closes the socket or ends (the socket reads EOF: no signal tied to
the thread that started it), and kills the runners it forked then.
"""
from __future__ import annotations

import argparse
import atexit
import fcntl
import json
import os
import selectors
import signal
import socket
import sys
import traceback

MAX_PACKET = 1 << 20
MAX_FDS = 16


PRELOAD = ("numpy", "torch", "triton", "triton.language", "evaluator.runner.harness")


def _preload() -> None:
    import importlib

    for name in PRELOAD:
        importlib.import_module(name)


def _become_runner(sock: socket.socket, req: dict, fds: list[int], ready: int) -> None:
    """In the forked child: the process `python -m evaluator.runner.harness ARGS` would be.
    `ready`: a pipe to the zygote, closed once the session is made (as Popen returns only after
    the child's setsid, so the judge may signal the group at once)."""
    sock.close()
    os.setsid()
    os.close(ready)
    targets = [int(t) for t in req["fds"]]
    # first above every target, so that placing one never closes another not yet placed
    above = max(targets + fds) + 1
    high = [fcntl.fcntl(fd, fcntl.F_DUPFD, above) for fd in fds]
    for src, target in zip(high, targets):
        os.dup2(src, target, inheritable=True)
    keep = set(targets)
    for name in os.listdir("/proc/self/fd"):
        fd = int(name)
        if fd not in keep:
            try:
                os.close(fd)
            except OSError:
                pass
    os.chdir(req["cwd"])
    os.environ.clear()
    os.environ.update({str(k): str(v) for k, v in req["env"].items()})
    import random
    import tempfile

    random.seed()  # not the zygote's state, shared by every child
    if "numpy" in sys.modules:
        sys.modules["numpy"].random.seed()  # its global generator was seeded at the zygote's import
    tempfile.tempdir = None  # TMPDIR is the request's
    sys.dont_write_bytecode = True
    sys.argv = ["-m", *req["args"]]
    import runpy

    # as `python -m` runs it: the harness's code as __main__ (submissions and tests reach it there)
    code = 0
    sys.modules.pop("evaluator.runner.harness", None)  # run afresh, as a new interpreter would
    try:
        runpy.run_module("evaluator.runner.harness", run_name="__main__", alter_sys=True)
    except SystemExit as e:
        code = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
    atexit._run_exitfuncs()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code or 0)


def _send(sock: socket.socket, **msg) -> None:
    sock.send(json.dumps(msg).encode())


def serve(sock: socket.socket) -> None:
    children: dict[int, int] = {}  # pidfd -> pid
    sel = selectors.DefaultSelector()
    sel.register(sock, selectors.EVENT_READ)
    try:
        while True:
            for key, _ in sel.select():
                if key.fileobj is sock:
                    try:
                        data, fds, _, _ = socket.recv_fds(sock, MAX_PACKET, MAX_FDS)
                    except OSError:
                        return
                    if not data:
                        for fd in fds:
                            os.close(fd)
                        return  # the judge has gone
                    _spawn(sock, sel, children, data, fds)
                else:
                    pidfd = key.fileobj
                    pid = children.pop(pidfd)
                    sel.unregister(pidfd)
                    os.close(pidfd)
                    _, status = os.waitpid(pid, 0)
                    _send(sock, t="exit", pid=pid, code=os.waitstatus_to_exitcode(status))
    finally:
        for pid in children.values():
            try:
                os.killpg(pid, signal.SIGKILL)
            except OSError:
                pass


def _spawn(sock, sel, children, data: bytes, fds: list[int]) -> None:
    req = {}
    try:
        req = json.loads(data)
        if len(req["fds"]) != len(fds):
            raise ValueError(f"{len(req['fds'])} targets for {len(fds)} descriptors")
        wait_r, ready_w = os.pipe()
        pid = os.fork()
        if pid == 0:
            try:
                os.close(wait_r)
                _become_runner(sock, req, fds, ready_w)
            except BaseException:  # noqa: BLE001 - the child never returns into the zygote's loop
                traceback.print_exc()
            os._exit(1)
        os.close(ready_w)
        os.read(wait_r, 1)  # EOF: the child has its session (or has died)
        os.close(wait_r)
        pidfd = os.pidfd_open(pid)
        children[pidfd] = pid
        sel.register(pidfd, selectors.EVENT_READ)
        _send(sock, t="started", id=req["id"], pid=pid)
    except Exception as e:  # noqa: BLE001 - a bad request fails alone; the judge starts the runner itself
        _send(sock, t="failed", id=req.get("id") if isinstance(req, dict) else None,
              error=f"{type(e).__name__}: {e}"[:500])
    finally:
        for fd in fds:
            os.close(fd)  # the runner's copies are its own: EOF must follow its death


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m evaluator.runner.zygote")
    p.add_argument("--fd", type=int, required=True)
    args = p.parse_args(argv)
    sock = socket.socket(fileno=args.fd)
    _preload()
    _send(sock, t="ready")
    serve(sock)
    # nothing is left to flush: Python's shutdown with torch loaded would keep the process (and
    # the judge's view of its runners) alive for another second on a busy CPU
    os._exit(0)


if __name__ == "__main__":
    sys.exit(main())
