"""Profile mode: the owner's kernel on one benchmark shape under a profiler. Never scored.

The verdict is the judge's, from a test-mode run (judge.py); nothing is profiled when it rejects.
Then, for the first benchmark shape of the task on this device:

1. a child process of the runner's user (65534 when the judge is root: profile_child.py's
   `launch` drops to it the way the runner does) imports the submission, builds the shape's inputs
   from a seed the judge picks, calls the kernel once (it compiles), writes that output's bytes, and
   calls it once more under the profiler;
2. the judge builds the same inputs and the gold answer itself and compares the bytes before it
   reads any profile: a wrong output gets the judge's reason code and no profile;
3. GPU: the child runs under Nsight Compute (`ncu`), which profiles the launches between
   cudaProfilerStart and cudaProfilerStop (at most MAX_KERNELS) with the SpeedOfLight and
   MemoryWorkloadAnalysis sections and exports an .ncu-rep; `ncu --import` turns that into rows,
   run as the runner's user as well, since the file is the child's. When ncu is missing or profiles
   nothing (no permission to read the counters: ERR_NVGPUCTRPERM), the reason is kept and the child
   runs again under torch.profiler, whose CUDA kernel table is shown instead. CPU: torch.profiler's
   operator table.

Whatever the child or ncu produced is the submission's claim: validated, size-limited and shown to
its owner, never scored (profile_report.py, docs/profile.md).
"""
from __future__ import annotations

import contextlib
import json
import os
import secrets
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import time
import types
from pathlib import Path

from evaluator.wire import isolation
from evaluator.contract import profile_report
from evaluator.judge import runner_process

NCU_SECTIONS = ("SpeedOfLight", "MemoryWorkloadAnalysis")
MAX_KERNELS = profile_report.MAX_KERNELS
CHILD_LIMIT_S = float(os.environ.get("EVALUATOR_PROFILE_LIMIT_S", "240"))
IMPORT_LIMIT_S = 120.0
MIN_CHILD_S = 20.0  # less time than this left: no (further) profiling run is started
FALLBACK_RESERVE_S = 60.0  # kept from the ncu run for the torch.profiler run after it
MARGIN_S = 10.0  # kept back from the evaluation's limit for writing the report
OUTPUT_TAIL = 8000  # characters of a run's output kept for its messages
ROWS_MAX_BYTES = 1 << 20


def find_ncu() -> str | None:
    """Nsight Compute's CLI: EVALUATOR_NCU, then PATH, then the CUDA toolkit's usual places."""
    from evaluator.judge.sanitize import find_tool

    return find_tool("EVALUATOR_NCU", "ncu", ("/usr/local/cuda/bin/ncu", "/usr/local/cuda-*/bin/ncu",
                                             "/opt/nvidia/nsight-compute/*/ncu"))


def apply(report: dict, source: bytes, *, time_left_s: float, file_out: str | None = None) -> dict:
    """Turn a test-mode report into a profile-mode one: profile the kernel unless it was rejected;
    a wrong output on the profile shape rejects it. The .ncu-rep goes to `file_out`, if given."""
    from evaluator.contract import report as schema
    from evaluator.common.checks import Failure

    report["mode"] = "profile"
    if report["verdict"] == "rejected":
        return report
    t0 = time.monotonic()
    session = None
    try:
        session = Session(report, source, deadline=t0 + time_left_s - MARGIN_S)
        report["profile"] = session.run()
        if session.file and file_out:
            from evaluator.wire.workdir import write_atomic

            write_atomic(file_out, session.file)
    except Failure as f:
        report["reason_codes"] += [code for code, _ in f.problems]
        report["reasons"] += [message[:schema.MAX_TEXT] for _, message in f.problems]
        report["verdict"] = schema.verdict_for(report["reason_codes"])
        report["tests"].append({"shape": dict(session.shape), "passed": False, "max_abs_err": None,
                                "message": f.problems[0][1][:1000]})
        report["profile"] = None
    except Exception as exc:  # the evaluator's own failure: the kernel keeps its verdict
        import traceback

        traceback.print_exc()  # into the evaluator's log, where the operator sees an evaluator bug
        shape = dict(session.shape) if session else {}
        report["profile"] = {"tool": "torch.profiler", "shape": shape,
                             "notes": [f"no profile could be made (an error of the evaluator, not of the "
                                       f"kernel): {type(exc).__name__}: {exc}"[:1000]]}
    finally:
        if session is not None:
            session.close()
        report["phases"]["profile_s"] = round(time.monotonic() - t0, 3)
    return report


def ncu_command(ncu: str, export: str) -> list[str]:
    """ncu around the profiled child. `--clock-control none`: ncu's default locks the GPU's clocks
    to base while it profiles (SM 1.41 GHz on the H200), which changes the GPU's settings for
    everything running on it and gives durations that are not those of a ranked run."""
    command = [ncu, "--profile-from-start", "off", "--target-processes", "all", "--clock-control", "none",
               "--launch-count", str(MAX_KERNELS), "--export", export, "--force-overwrite"]
    for section in NCU_SECTIONS:
        command += ["--section", section]
    return command


class Session:
    """One profile: the scratch directory the child works in, its runs, and the judge's checks."""

    def __init__(self, report: dict, source: bytes, *, deadline: float):
        from evaluator.common.shapes import bench_shapes
        from evaluator.tasks import get_task

        self.report, self.deadline = report, deadline
        self.task = get_task(report["task"])
        self.device = report["device"]
        self.shape = dict(bench_shapes(self.task, self.device)[0])
        self.seed = secrets.randbits(62)
        self.uid = isolation.NOBODY if isolation.is_root() else os.getuid()
        self.scratch = _scratch(source)
        self.env = runner_process.runner_env(types.SimpleNamespace(scratch=Path(self.scratch)), self.device)
        self.ncu_status = None
        self.file = b""
        self.started = time.monotonic()

    def close(self) -> None:
        shutil.rmtree(self.scratch, ignore_errors=True)

    # ---- the two tools -------------------------------------------------------------------------
    def run(self) -> dict:
        if self.device == "cuda":
            ncu = find_ncu()
            if ncu is None:
                self.ncu_status = {"status": "not_found", "note": "ncu is not installed where the evaluator "
                                                                  "looks (PATH, /usr/local/cuda*/bin)"}
            else:
                kernels = self._ncu(ncu)
                if kernels:
                    return self._profile("ncu", kernels=kernels)
        return self._torch()

    def _ncu(self, ncu: str) -> list[dict]:
        out_dir = self._out_dir("ncu")
        export = os.path.join(out_dir, "profile")
        run = self._child("ncu", out_dir, wrap=ncu_command(ncu, export), expose=[os.path.dirname(os.path.realpath(ncu))],
                          reserve_s=FALLBACK_RESERVE_S)
        if run is None or not self._checked(out_dir, run):
            self._ncu_failed(run.text if run else "", run)
            return []
        data = _read_owned(export + ".ncu-rep", profile_report.MAX_FILE_BYTES, self.uid)
        if not data:
            self._ncu_failed(run.text, run)
            return []
        # the CSV runs to kilobytes a kernel and its header comes first: read from the start, up
        # to the rows' cap, not the tail kept of other runs for their messages
        imported = self._run([ncu, "--import", export + ".ncu-rep", "--csv", "--page", "details"],
                             min(IMPORT_LIMIT_S, self._left()), expose=[os.path.dirname(os.path.realpath(ncu))],
                             head=ROWS_MAX_BYTES)
        kernels = profile_report.parse_ncu_csv(imported.text)
        if not kernels:
            self._ncu_failed(run.text + "\n" + imported.text, imported)
            return []
        self.ncu_status = {"status": "ok", "note": ""}
        self.file = data
        return kernels

    def _ncu_failed(self, text: str, run) -> None:
        status, why = profile_report.ncu_problem(text)
        if run is None:
            why = "no time was left for ncu"
        elif run.timed_out:
            why = f"ncu did not finish within {run.limit_s:.0f} s"
        self.ncu_status = {"status": status, "note": why}

    def _torch(self) -> dict:
        out_dir = self._out_dir("torch")
        run = self._child("torch", out_dir)
        if run is None:
            return self._profile("torch.profiler", notes=["no time was left for a profiling run"])
        if not self._checked(out_dir, run):
            from evaluator.common.checks import Failure

            where = f"profile shape {_fmt(self.shape)}"
            if run.timed_out:
                raise Failure(("timeout", f"{where}: the profiling run took longer than {run.limit_s:.0f} s"))
            raise Failure(("crash", f"{where}: the profiling run ended without an output (exit status "
                                    f"{run.rc}): {_last_lines(run.text)}"))
        rows = _read_json(os.path.join(out_dir, "profile.json"), ROWS_MAX_BYTES, self.uid)
        if not isinstance(rows, dict):
            return self._profile("torch.profiler", notes=["torch.profiler gave no table: " + _last_lines(run.text)])
        return self._profile("torch.profiler", ops=rows.get("ops") or [], table=rows.get("table") or "")

    def _profile(self, tool: str, *, kernels=(), ops=(), table="", notes=()) -> dict:
        from evaluator.common import timing

        ceilings = timing.measure_ceilings(self.device)
        self.report["ceilings"] = dict(ceilings)
        profile = {
            "tool": tool, "shape": self.shape,
            "floor_ms": self.task.floor_ms(self.shape, bandwidth_bytes_s=ceilings["bandwidth_bytes_s"],
                                           peak_flop_s=ceilings["peak_flop_s"]),
            "bytes_moved": float(self.task.bytes_moved(self.shape)), "flops": float(self.task.flops(self.shape)),
            "ncu": self.ncu_status, "kernels": list(kernels), "ops": list(ops), "table": table,
            "file_bytes": len(self.file), "seconds": round(time.monotonic() - self.started, 3),
            "notes": list(notes)}
        try:
            return profile_report.validate(profile)
        except ValueError as exc:  # the child's rows: its claim, and this one is malformed
            self.file = b""
            profile.update(kernels=[], ops=[], table="", file_bytes=0,
                           notes=[f"the profiler's rows were malformed and are not shown: {exc}"[:1000]])
            return profile_report.validate(profile)

    # ---- the child and the judge's check of its output -----------------------------------------
    def _out_dir(self, name: str) -> str:
        path = os.path.join(self.scratch, name)
        os.mkdir(path)
        os.chmod(path, 0o1777)  # the child (another user) writes its files here
        return path

    def _left(self) -> float:
        return self.deadline - time.monotonic()

    def _child(self, tool: str, out_dir: str, *, wrap=(), expose=(), reserve_s: float = 0.0):
        limit = min(CHILD_LIMIT_S, self._left() - reserve_s)
        if limit < MIN_CHILD_S:
            return None
        argv = [*wrap, sys.executable, "-P", "-s", "-m", "evaluator.runner.profile_child", "child", "--task", self.task.name,
                "--device", self.device, "--source", os.path.join(self.scratch, "submission.py"),
                "--shape", json.dumps(self.shape), "--seed", str(self.seed), "--dir", out_dir, "--tool", tool]
        return self._run(argv, limit, expose=expose)

    def _run(self, argv: list[str], limit_s: float, *, expose=(), head: int | None = None):
        """Run argv as the runner's user (through `launch`); its output (the tail, or with `head` the
        first `head` bytes) and how it ended."""
        launcher = [sys.executable, "-P", "-s", "-m", "evaluator.runner.profile_child", "launch"]
        if isolation.is_root():
            launcher += ["--drop-to", str(self.uid)]
        for path in expose:
            launcher += ["--expose", path]
        limit_s = max(1.0, limit_s)
        with tempfile.TemporaryFile() as out:
            proc = subprocess.Popen([*launcher, "--", *argv], env=self.env, cwd=self.scratch,
                                    stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT,
                                    start_new_session=True)
            timed_out = False
            try:
                rc = proc.wait(timeout=limit_s)
            except subprocess.TimeoutExpired:
                timed_out, rc = True, None
            finally:
                if proc.poll() is None:
                    with contextlib.suppress(OSError):
                        os.killpg(proc.pid, signal.SIGKILL)
                    proc.wait()
            text = _head(out, head) if head else _tail(out, OUTPUT_TAIL)
            return types.SimpleNamespace(rc=rc, text=text, timed_out=timed_out, limit_s=limit_s)

    def _checked(self, out_dir: str, run) -> bool:
        """The output of the child's first call against the judge's own gold answer: False when it
        wrote none; Failure when it is wrong."""
        import torch

        from evaluator.common import checks
        from evaluator.tasks import base

        meta = _read_json(os.path.join(out_dir, "output.json"), 4096, self.uid)
        if not isinstance(meta, dict):
            return False
        where = f"profile shape {_fmt(self.shape)}"
        inputs = self.task.make_inputs(self.shape, self.seed, self.device)
        with base.full_fp32():
            gold = self.task.reference_fp32(*inputs)
        if meta.get("type") != "tensor":
            raise checks.Failure(("wrong_type", f"{where}: custom_kernel returned "
                                                f"{checks.text(meta.get('type'), 40)}, not a torch.Tensor"))
        dtype = self.task.output_dtype
        checks.check_meta(meta, dtype=dtype, shape=tuple(gold.shape), device=self.device, where=where)
        nbytes = gold.numel() * torch.empty((), dtype=dtype).element_size()
        data = _read_owned(os.path.join(out_dir, "output.bin"), nbytes, self.uid)
        if data is None or len(data) != nbytes:
            raise checks.protocol(f"{where}: the profiling run's output file is not {nbytes} bytes long")
        raw = torch.frombuffer(bytearray(data), dtype=torch.uint8) if nbytes else torch.empty(0, dtype=torch.uint8)
        checks.compare(checks.from_bytes(raw, dtype, tuple(gold.shape), self.device), gold, self.task.tolerance, where)
        return True


# ---- files the child wrote: read as untrusted data ---------------------------------------------

def _scratch(source: bytes) -> str:
    """The child's directory: its HOME, caches and output files; 1777 because the child is another
    user that the judge (without CAP_CHOWN in the box) cannot give a directory to."""
    path = tempfile.mkdtemp(prefix="evaluator-profile-")
    for sub in ("", "tmp", "cache", "triton", "inductor"):
        full = os.path.join(path, sub)
        if sub:
            os.mkdir(full)
        os.chmod(full, 0o1777)
    fd = os.open(os.path.join(path, "submission.py"), os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
    with os.fdopen(fd, "wb") as f:
        f.write(source)
    os.chmod(os.path.join(path, "submission.py"), 0o644)
    return path


def _read_owned(path: str, limit: int, uid: int) -> bytes | None:
    """A regular file of `uid` (never a link, a FIFO, or another user's file linked in), at most
    `limit` bytes; None otherwise."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return None
    with os.fdopen(fd, "rb") as f:
        info = os.fstat(f.fileno())
        if not stat.S_ISREG(info.st_mode) or info.st_uid != uid or info.st_size > limit:
            return None
        data = f.read(limit + 1)
    return data if len(data) <= limit else None


def _read_json(path: str, limit: int, uid: int):
    data = _read_owned(path, limit, uid)
    if data is None:
        return None
    try:
        return json.loads(data.decode("utf-8"), parse_constant=lambda name: None)
    except (UnicodeDecodeError, ValueError, RecursionError):
        return None


def _head(f, limit: int) -> str:
    f.seek(0)
    return f.read(limit).decode("utf-8", "replace")


def _tail(f, limit: int) -> str:
    size = f.seek(0, os.SEEK_END)
    f.seek(max(0, size - limit))
    return f.read(limit).decode("utf-8", "replace")


def _last_lines(text: str, n: int = 3) -> str:
    lines = [line.strip() for line in text.strip().splitlines() if line.strip()]
    return " / ".join(lines[-n:])[:1000] or "no output"


def _fmt(shape: dict) -> str:
    return "{" + ", ".join(f"{k}={v}" for k, v in shape.items()) + "}"
