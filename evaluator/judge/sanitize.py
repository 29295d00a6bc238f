"""Memory and race checks with NVIDIA's compute-sanitizer (GPU hosts where it works).

A ranked GPU evaluation that is not rejected runs the submission once more, on the smallest test
shape, under `compute-sanitizer --tool memcheck` and `--tool racecheck`. An out-of-bounds access or
a shared-memory race flags the submission with the tool's own finding. The child runs as the
runner's user (uid 65534 when the judge is root) with the same scrubbed environment; the PyTorch
caching allocator is off in it so that each tensor is its own allocation and a write past its end
lands outside any allocation, where memcheck sees it.

By default both tools run after the verdict (`apply`), side by side; the evaluation waits for the
slower. They then load the submission's kernels from the Triton cache its runner compiled them
into (the judge keeps the runner's work directory until they end): the same submission as the
same user, so it learns nothing new, and the tools skip compiling each kernel again.

With EVALUATOR_SANITIZE_EARLY=1 and a root judge they start once the baselines have compiled and
run beside the correctness phase (`Early`), each under a small init of a PID namespace of its own
(`contain`): when the tool ends the kernel kills whatever the submission left behind in it, so
nothing of it can still use the GPU when the timing starts, which waits for both tools.
That is off by default: on the H200 the tools started this way inside an evaluation never find
their target (docs/evaluator.md, Phases; figures in docs/bench/judge-clock.md).
"""
from __future__ import annotations

import argparse
import contextlib
import glob
import json
import os
import re
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
import time

from evaluator.wire import procinfo

TOOLS = ("memcheck", "racecheck")
ERROR_EXIT = 86
NOT_CONTAINED = 87  # the wrapper could not make the PID namespace: nothing of the submission ran
# and says so on its output first, so that a submission that exits 87 is not taken for that
NOT_CONTAINED_LINE = "evaluator.judge.sanitize: not contained"
LIMIT_S = float(os.environ.get("EVALUATOR_SANITIZER_LIMIT_S", 180))
# the timing may wait for the early tools until only this share of the evaluation's time is left;
# then they are stopped and run again after the verdict
KEEP_FOR_TIMING = 0.5


def find_tool(variable: str, name: str, patterns: tuple[str, ...]) -> str | None:
    """A CUDA toolkit command: the path in `variable` (when set, nothing else), then PATH, then
    the newest match of `patterns` (the toolkit's usual places)."""
    explicit = os.environ.get(variable)
    if explicit:
        return explicit if os.path.exists(explicit) else None
    found = shutil.which(name)
    if found:
        return found
    for pattern in patterns:
        hits = sorted(glob.glob(pattern))
        if hits:
            return hits[-1]
    return None


def find_sanitizer() -> str | None:
    return find_tool("EVALUATOR_SANITIZER", "compute-sanitizer",
                     ("/usr/local/cuda/bin/compute-sanitizer", "/usr/local/cuda-*/bin/compute-sanitizer",
                      "/opt/nvidia/*/compute-sanitizer/compute-sanitizer"))


def parse(output: str) -> list[str]:
    """The tool's findings: its error lines, first of each kind, without the banner."""
    findings = []
    for line in output.splitlines():
        text = line.removeprefix("=========").strip()
        if re.match(r"(Invalid|Error: Race|Race reported|Hazard|Out-of-range|Misaligned|Uninitialized|"
                    r"Barrier error|Program hit)", text):
            if text not in findings:
                findings.append(text)
    return findings[:5]


def enabled() -> bool:
    return os.environ.get("EVALUATOR_SANITIZE", "1") != "0"


def wanted(report: dict) -> bool:
    return (report.get("device") == "cuda" and report.get("mode") == "ranked"
            and report.get("verdict") != "rejected" and enabled())


class Run:
    """One tool's run of the submission, started at once; `finish` waits for it and reads it.
    `contained`: the tool starts inside a PID namespace of its own (`contain`, root only)."""

    def __init__(self, tool: str, sanitizer: str, source: bytes, *, task: str, shape: dict, seed: int,
                 contained: bool, wrapper_flags: tuple = (), triton_cache: str | None = None):
        from evaluator.wire import isolation

        self.tool = tool
        self.scratch = tempfile.mkdtemp(prefix="evaluator-sanitize-")
        os.chmod(self.scratch, 0o1777)  # the child (another user) keeps its caches here
        source_path = os.path.join(self.scratch, "submission.py")
        with open(source_path, "wb") as f:
            f.write(source)
        os.chmod(source_path, 0o644)
        env = {k: os.environ[k] for k in isolation.ENV_PASSTHROUGH if k in os.environ}
        env.update(HOME=self.scratch, TMPDIR=self.scratch,
                   TRITON_CACHE_DIR=triton_cache or os.path.join(self.scratch, "triton"),
                   PYTHONPATH=isolation.PACKAGE_ROOT, PYTHONDONTWRITEBYTECODE="1",
                   PYTORCH_NO_CUDA_MEMORY_CACHING="1", PATH=os.environ.get("PATH", "/usr/bin:/bin"))
        # the target must reach CUDA within the tool's launch timeout (10 s unless told), which a
        # child importing torch on a loaded machine can miss; then the tool waits for it forever
        args = [sanitizer, "--tool", tool, "--error-exitcode", str(ERROR_EXIT), "--print-limit", "20",
                "--launch-timeout", str(int(LIMIT_S)), "--target-processes", "all",
                sys.executable, "-P", "-s", "-m", "evaluator.runner.sanitize_child", "--task", task,
                "--source", source_path, "--shape", json.dumps(shape), "--seed", str(seed)]
        kwargs = {}
        if contained:
            args = [sys.executable, "-P", "-s", "-m", "evaluator.judge.sanitize", "contain",
                    "--drop-to", str(isolation.NOBODY), *wrapper_flags, "--", *args]
        elif isolation.is_root():
            kwargs = dict(user=isolation.NOBODY, group=isolation.NOBODY, extra_groups=[])
        self.out = tempfile.TemporaryFile()  # the judge's file: the child only holds the descriptor
        self.closed = self.uncontained = False
        self.tail = self.waits = ""
        self.started = time.monotonic()
        try:
            self.proc = subprocess.Popen(args, env=env, cwd=self.scratch, stdin=subprocess.DEVNULL,
                                         stdout=self.out, stderr=subprocess.STDOUT, start_new_session=True,
                                         close_fds=True, **kwargs)
        except OSError:
            self.out.close()
            shutil.rmtree(self.scratch, ignore_errors=True)
            raise

    def finish(self, wait_s: float) -> dict | None:
        """The tool's result, or None when it did not end within `wait_s` (it is stopped then) or
        could not be contained (`uncontained`)."""
        ended = self._ended(wait_s)
        seconds = time.monotonic() - self.started
        self.out.seek(0)
        output = self.out.read(1 << 20).decode("utf-8", "replace")
        self.tail = output[-400:]
        if not ended:  # the operator's log: where the tool and its target were waiting
            self.waits = procinfo.session(self.proc.pid)
            print(f"evaluator: {self.tool} had not ended after {seconds:.0f} s; its output: {self.tail!r}; "
                  f"where its processes waited:\n{self.waits}", file=sys.stderr, flush=True)
        self.kill()  # the leader is not reaped yet, so its group id cannot name anyone else
        if not ended:
            return None
        if self.proc.returncode == NOT_CONTAINED and output.startswith(NOT_CONTAINED_LINE):
            self.uncontained = True
            return None
        return result(self.tool, self.proc.returncode, output, seconds)

    def wait(self, room_s: float = float("inf")) -> dict | None:
        """`finish` within the tool's own limit and `room_s`: a tool past its own limit reads
        timed out; None when `room_s` cut it short or it could not be contained."""
        own = LIMIT_S - (time.monotonic() - self.started)
        got = self.finish(min(own, room_s))
        if got is None and own <= room_s and not self.uncontained:
            return timed_out(self.tool)
        return got

    def _ended(self, wait_s: float) -> bool:
        deadline = time.monotonic() + max(wait_s, 0.0)
        while True:
            if os.waitid(os.P_PID, self.proc.pid, os.WEXITED | os.WNOWAIT | os.WNOHANG) is not None:
                return True
            if time.monotonic() >= deadline:
                return False
            time.sleep(0.02)

    def kill(self) -> None:
        """The whole session (the wrapper and the namespace's init with it) and the scratch go."""
        if self.closed:
            return
        self.closed = True
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.proc.pid, signal.SIGKILL)
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.proc.wait(timeout=10)
        shutil.rmtree(self.scratch, ignore_errors=True)
        self.out.close()


def result(tool: str, rc: int, output: str, seconds: float) -> dict:
    findings = parse(output)
    if rc == ERROR_EXIT or findings:
        return {"tool": tool, "ok": False, "findings": findings or [output[-300:]], "seconds": seconds, "note": ""}
    if rc != 0:
        note = "device not supported" if "not supported" in output.lower() else output.strip()[-300:]
        return {"tool": tool, "ok": None, "findings": [], "seconds": seconds, "note": note}
    return {"tool": tool, "ok": True, "findings": [], "seconds": seconds, "note": ""}


def timed_out(tool: str) -> dict:
    return {"tool": tool, "ok": None, "findings": [], "seconds": LIMIT_S,
            "note": f"{tool} did not finish within {LIMIT_S:.0f} s"}


def smallest_shape(task_name: str) -> dict:
    from evaluator.common.shapes import shape_size
    from evaluator.tasks import get_task

    task = get_task(task_name)
    # the smallest shape that is more than one element: cheap under the tools, still a real launch
    return min(task.test_shapes, key=lambda s: shape_size(s) if shape_size(s) > 1 else 1 << 62)


def start(source: bytes, task: str, *, contained: bool, triton_cache: str | None = None) -> list[Run] | None:
    """Both tools, side by side. `triton_cache`: a Triton cache of the runner's user to compile
    into (the candidate runner's own, after the verdict); else each tool's scratch."""
    sanitizer = find_sanitizer()
    if not sanitizer:
        return None
    shape, seed = smallest_shape(task), secrets.randbits(62)
    runs = []
    try:
        for tool in TOOLS:
            runs.append(Run(tool, sanitizer, source, task=task, shape=shape, seed=seed, contained=contained,
                            triton_cache=triton_cache))
    except OSError:
        for run in runs:
            run.kill()
        raise
    return runs


class Early:
    """The tools started beside the correctness phase (root only); `join` before the timing."""

    def __init__(self, source: bytes, task: str):
        self.runs = start(source, task, contained=True)
        self.results = None
        self.waited_s = 0.0

    @classmethod
    def begin(cls, ev) -> "Early | None":
        from evaluator.wire import isolation

        if (ev.device != "cuda" or ev.mode != "ranked" or not enabled() or not isolation.is_root()
                or os.environ.get("EVALUATOR_SANITIZE_EARLY", "0") != "1"):
            return None
        try:
            return cls(ev.source, ev.task_ref)
        except OSError:
            return None  # the tools run after the verdict, where a failure to start is reported

    def join(self, time_left_s: float, time_limit_s: float) -> None:
        """Wait for both tools, at most until KEEP_FOR_TIMING of the evaluation's time is left;
        a tool stopped for that, or one that could not be contained, runs again after the verdict."""
        if self.runs is None or self.results is not None:
            return
        t = time.monotonic()
        spare = max(time_left_s - KEEP_FOR_TIMING * time_limit_s, 0.0)
        results = []
        for run in self.runs:
            got = run.wait(spare - (time.monotonic() - t))
            if got is None:  # the operator's log: why the tool runs again after the verdict
                print(f"evaluator: {run.tool} beside the correctness phase did not end "
                      f"({'not contained' if run.uncontained else 'stopped for the timing'}); "
                      f"its output: {run.tail!r}", file=sys.stderr, flush=True)
            results.append(got)
        self.waited_s = time.monotonic() - t
        self.results = results if all(r is not None for r in results) else []

    def close(self) -> None:
        for run in self.runs or ():
            run.kill()


def finish(report: dict, source: bytes, early: Early | None, *, triton_cache: str | None = None) -> dict:
    """The judge's last step: the early tools' results, or the tools run now; flag any finding.
    `triton_cache`: see `start`."""
    if not wanted(report):
        if early:
            early.close()
        return report
    if early is not None and early.results:
        report["sanitizer"] = early.results
        report.setdefault("phases", {})["sanitizer_s"] = round(early.waited_s, 3)
        return _flag(report)
    waited = 0.0
    if early:
        early.close()
        waited = early.waited_s
    report = apply(report, source, triton_cache=triton_cache)
    if waited:  # the wait for the early tools that were stopped is part of the evaluation too
        phases = report.setdefault("phases", {})
        phases["sanitizer_s"] = round(phases.get("sanitizer_s", 0.0) + waited, 3)
    return report


def apply(report: dict, source: bytes, *, triton_cache: str | None = None) -> dict:
    """Run both tools now, side by side, for a ranked GPU report that is not rejected."""
    if not wanted(report):
        return report
    started = time.monotonic()
    try:
        runs = start(source, report["task"], contained=False, triton_cache=triton_cache)
    except OSError as e:
        report["sanitizer"] = [_missing(tool, f"compute-sanitizer could not start: {e}") for tool in TOOLS]
        return report
    if runs is None:
        report["sanitizer"] = [_missing(tool) for tool in TOOLS]
        return report
    report["sanitizer"] = [run.wait() for run in runs]
    report.setdefault("phases", {})["sanitizer_s"] = round(time.monotonic() - started, 3)
    return _flag(report)


def _missing(tool: str, note: str = "compute-sanitizer not found") -> dict:
    return {"tool": tool, "ok": None, "findings": [], "seconds": 0.0, "note": note[:300]}


def _flag(report: dict) -> dict:
    for r in report["sanitizer"]:
        if r["ok"] is False:
            report["verdict"] = "flagged"
            report["reasons"].append(f"compute-sanitizer {r['tool']}: " + "; ".join(r["findings"])[:500])
            report["reason_codes"].append("sanitizer")
    return report


def _contain(argv) -> int:
    """As root: a new PID namespace, then the runner's user, then the tool as a child of this
    process, the namespace's init, which reaps until the tool has ended and then leaves with its
    status (and the kernel kills whatever is left in the namespace). Exits NOT_CONTAINED, before
    anything of the submission runs, when the namespace or the user cannot be had. `--exec`: the
    tool itself is the init (bench/sanitizer_contain.py compares the two)."""
    p = argparse.ArgumentParser()
    p.add_argument("--drop-to", type=int, required=True)
    p.add_argument("--exec", action="store_true")
    p.add_argument("command", nargs=argparse.REMAINDER)
    a = p.parse_args(argv)
    command = a.command[1:] if a.command[:1] == ["--"] else a.command
    if not command:
        p.error("no command")
    from evaluator.wire import isolation

    if isolation.enter_pid_namespace():
        return _not_contained()
    needed = [sys.prefix, sys.base_prefix, sys.exec_prefix, isolation.PACKAGE_ROOT, os.getcwd(),
              os.path.dirname(os.path.realpath(command[0]))]
    notes = isolation.drop_privileges(a.drop_to, a.drop_to, needed)
    if os.getuid() != a.drop_to or any("no_new_privs" in n for n in notes):
        return _not_contained()
    if a.exec:
        os.execv(command[0], command)
    tool = os.fork()
    if tool == 0:
        try:
            os.execv(command[0], command)
        finally:
            os._exit(127)
    while True:  # orphans of the namespace are reparented here: reap them until the tool ends
        pid, status = os.wait()
        if pid == tool:
            return os.WEXITSTATUS(status) if os.WIFEXITED(status) else 128 + os.WTERMSIG(status)


def _not_contained() -> int:
    print(NOT_CONTAINED_LINE, flush=True)
    return NOT_CONTAINED


if __name__ == "__main__":
    if sys.argv[1:2] != ["contain"]:
        print("usage: python -m evaluator.judge.sanitize contain ...", file=sys.stderr)
        sys.exit(2)
    sys.exit(_contain(sys.argv[2:]))
