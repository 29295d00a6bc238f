"""The setup phase of an evaluation: the judge's caches and ceilings, then the processes (the
candidate's runner, in ranked mode the trusted baseline runner with torch.compile already compiled
and, on the GPU, one checker per runner), up to the moment the submission is imported.
"""
from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import platform
import shutil
import stat
import tempfile
import time

import torch

from evaluator.judge import baseline_compile
from evaluator.judge import checkers
from evaluator.judge import calls
from evaluator.judge import compile_seed
from evaluator.wire import isolation
from evaluator.judge import sanitize
from evaluator.common import timing
from evaluator.wire import workdir
from evaluator.common.checks import Failure
from evaluator.judge.link import Link
from evaluator.judge.runner_process import Runner
from evaluator.common.shapes import bench_shapes, shape_size

SMALL_SHAPES_CPU = 3  # on CPU only this many of the smallest test shapes are called twice / re-checked


def judge_cache_dir() -> str | None:
    """A persistent directory for the judge's torch.compile caches that the runner cannot write.
    Only when the runner is another user (or EVALUATOR_JUDGE_CACHE names one explicitly): a runner
    of the judge's own uid could poison a shared cache, so then each evaluation starts empty."""
    explicit = os.environ.get("EVALUATOR_JUDGE_CACHE")
    if explicit:
        path = explicit
    elif isolation.is_root():
        base = os.environ.get("XDG_CACHE_HOME") or "/var/tmp"
        path = os.path.join(base, f"evaluator-judge-{os.getuid()}")
    else:
        return None
    try:
        os.makedirs(path, mode=0o700, exist_ok=True)
        st = os.lstat(path)  # not a symlink planted by someone else, nor their directory
        if not stat.S_ISDIR(st.st_mode) or st.st_uid != os.getuid() or st.st_mode & 0o077:
            return None
    except OSError:
        return None
    return path


def gpu_uuid(device: int) -> str | None:
    """The device's UUID as nvidia-smi writes it ("GPU-" and 32 hex digits in groups): the one
    name of a physical GPU that does not depend on which devices a process was given."""
    uuid = getattr(torch.cuda.get_device_properties(device), "uuid", None)
    return f"GPU-{uuid}" if uuid is not None else None


@dataclasses.dataclass(slots=True)
class Setup:
    """The setup's output (`prepare`): what the judge needs before any process starts."""
    task: object  # evaluator.tasks.base.Task
    caller: calls.Caller
    cache: str  # the judge's compile caches (judge_cache_dir, or tmp_cache)
    tmp_cache: str | None  # a cache of this evaluation only, removed when it closes
    quick: bool  # the quick CPU repetitions (timing.quick)
    test_shapes: list[dict]  # the public test shapes, then those drawn for this evaluation
    small_shapes: list[dict]  # the test shapes called twice and re-checked after timing
    bench_shapes: list[dict]
    probe: timing.Probe | None  # the GPU probe of a ranked evaluation
    ceilings: dict | None  # the device's bandwidth and peak FLOP rate (ranked mode)
    work: workdir.Workdir  # the candidate runner's work directory


@dataclasses.dataclass(slots=True)
class Threads:
    """The runner's threads before the submission was imported (`start`), which
    Evaluation.check_threads compares later counts with."""
    names_base: list[str]
    base: int  # raised by profiler_growth once the correctness phase has profiled a call
    profiler_growth: int  # threads one profiler session starts (the runner's hello)


def prepare(ev) -> Setup:
    """Everything the judge needs before any process starts: caches, the task, the shapes, the
    device's ceilings and the submission's work directory. `ev`: the Evaluation's settings and
    report (versions, GPU and ceilings are written into it)."""
    cache = judge_cache_dir()
    tmp_cache = None
    if cache is None:
        tmp_cache = cache = tempfile.mkdtemp(prefix="evaluator-judge-")
    try:
        return _prepare(ev, cache, tmp_cache)
    except BaseException:
        if tmp_cache:  # Evaluation.close removes it once the setup exists
            shutil.rmtree(tmp_cache, ignore_errors=True)
        raise


def _prepare(ev, cache: str, tmp_cache: str | None) -> Setup:
    os.environ["TORCHINDUCTOR_CACHE_DIR"] = os.path.join(cache, "inductor")
    os.environ["TRITON_CACHE_DIR"] = os.path.join(cache, "triton")
    if not isolation.is_root():
        isolation.make_undumpable()
    from evaluator.tasks import get_task, task_ref

    task = get_task(ev.task_name)
    if task.model is not None and task.model.problem.has_state:
        # parameters drawn under a seed of this evaluation, the same in every process told the ref
        ev.task_ref = task_ref(ev.task_name, ev.derive(ev.master, "params"))
        task = get_task(ev.task_ref)
    caller = calls.Caller(task, ev.device, ev.master)
    import triton

    ev.report["versions"] = {"python": platform.python_version(), "torch": torch.__version__,
                             "triton": triton.__version__, "cuda": torch.version.cuda}
    if ev.device == "cuda":
        torch.cuda.set_device(0)
        ev.report["gpu_name"] = torch.cuda.get_device_name(0)
        ev.report["gpus_visible"] = torch.cuda.device_count()
        ev.report["gpu_uuid"] = gpu_uuid(0)
        host = os.environ.get("EVALUATOR_HOST_GPU", "")
        ev.report["gpu_index"] = int(host) if host.isdigit() else None
    quick = timing.quick() and ev.device == "cpu"
    test_shapes = task.test_shapes_for(ev.derive(ev.master, "shapes"), ev.device)
    if ev.device == "cuda":
        small_shapes = list(test_shapes)
    else:
        small_shapes = sorted(test_shapes, key=shape_size)[:SMALL_SHAPES_CPU]
    # measured before any submission code exists on this machine. GPU only: on a multi-core
    # CPU a busy background process need not slow the probe; there the tree-wide SIGSTOP is
    # the defence
    probe = timing.Probe(ev.device) if ev.device == "cuda" and ev.mode == "ranked" else None
    measured = None
    if ev.mode == "ranked":
        measured = ceilings(ev.device, cache, ev.report.get("gpu_name"))
        ev.report["ceilings"] = dict(measured)
    return Setup(task=task, caller=caller, cache=cache, tmp_cache=tmp_cache, quick=quick,
                 test_shapes=test_shapes, small_shapes=small_shapes, bench_shapes=bench_shapes(task, ev.device), probe=probe,
                 ceilings=measured, work=workdir.Workdir(ev.source))


def ceilings(device: str, cache: str, gpu_name: str | None) -> dict:
    """The device's bandwidth and peak FLOP rate; on the GPU cached per device and torch version in
    the judge's cache."""
    if device != "cuda":
        return timing.measure_ceilings("cpu")
    key = "".join(c if c.isalnum() else "_" for c in f"{gpu_name}-{torch.__version__}")
    path = os.path.join(cache, f"ceilings-{key}.json")
    with contextlib.suppress(OSError, ValueError):
        with open(path) as f:
            cached = json.load(f)
        cached["source"] = "cached"
        return cached
    measured = timing.measure_ceilings("cuda")
    with contextlib.suppress(OSError):
        with open(path, "w") as f:
            json.dump(measured, f)
    return measured


def start(ev) -> Threads:
    """Start the runner (and in ranked mode the checkers and the baselines), then have it import
    the submission; the report records how the runner is isolated. Each process goes into the
    Evaluation as soon as it exists (its close ends them whatever happens next); returns the
    runner's threads before the import."""
    setup = ev.setup
    ev.runner = Runner(setup.work, task=ev.task_ref, device=ev.device)
    ev.link = Link(ev.send, ev.expect, setup.work)
    if ev.mode == "ranked" and ev.device == "cuda":
        start_checkers(ev)
    if ev.mode == "ranked":
        if baseline_compile.overlaps(ev):
            # the judge's cache holds this task's picks: the compile runs beside the correctness
            # phase, and the picks are copied for the submission now (baseline_compile.py)
            ev.compiling = baseline_compile.Overlap(ev)
        else:
            baseline_compile.run(ev)
        # before the submission loads, from picks the judge's cache holds (made just now, or by
        # an earlier evaluation when the compile runs beside): a torch.compile inside the
        # submission then picks the kernels the baseline runs (evaluator/judge/compile_seed.py)
        try:
            ev.report["compile_cache"] = compile_seed.seed(setup.work, setup.cache) \
                if compile_seed.enabled() else "off (EVALUATOR_COMPILE_SEED=0)"
        except OSError as e:
            ev.report["compile_cache"] = f"not copied: {e}"[:200]
        # once inductor has nothing left to benchmark (the submission must not load the GPU
        # while it picks the baselines' kernels), beside the correctness phase; joined before
        # the timing
        ev.sanitizer = sanitize.Early.begin(ev)
    t = time.monotonic()
    ev.report["phases"]["setup_s"] = t - ev.t0
    try:
        hello = ev.link.hello(ev.deadline)
    except Failure as f:
        # nothing of the submission has run yet: this is the evaluator's failure, not a verdict
        raise RuntimeError(f"the runner failed to start ({f}); its stderr:\n"
                           + workdir.logs(setup.work)[-4000:]) from None
    names = ev.runner.thread_names()
    # sent before the submission exists, so trusted: threads one profiler session starts
    growth = hello.get("profiler_growth")
    ev.threads = Threads(names_base=names, base=len(names),
                         profiler_growth=growth if isinstance(growth, int) and 0 <= growth <= 4 else 0)
    for checker in ev.checkers.values():
        checker.ping()  # non-dumpable and answering before the submission exists
    ev.link.load(ev.deadline)
    # the runner starts while the judge compiles: count only the time spent waiting for it
    ev.report["phases"]["startup_s"] = time.monotonic() - t
    ev.report["isolation"] = isolation_report(ev.runner, hello)
    ev.check_threads("after the submission was imported", "import")
    return ev.threads


def isolation_report(runner, hello: dict) -> dict:
    notes = hello.get("notes") if isinstance(hello.get("notes"), list) else []
    status = runner.status()
    iso = {"judge_uid": os.geteuid(), **status}
    iso["separate_user"] = status.get("runner_uid", os.geteuid()) != os.geteuid()
    iso["note"] = "; ".join(str(n) for n in notes)[:250] or (
        "" if iso["separate_user"] else "the runner shares the judge's uid (the judge is not root)")
    return iso


def start_checkers(ev) -> None:
    """GPU: one checker process per runner, of that runner's uid (CUDA IPC fails across
    users), started before any submission code exists (batch.py, checker.py)."""
    work = ev.setup.work
    ev.checkers["cand"] = checkers.CheckerProcess(ev.task_ref, uid=work.uid, cache=work.private_dir(),
                                               log_dir=str(work.path))
    ev.checkers["base"] = checkers.CheckerProcess(ev.task_ref, uid=os.getuid(), cache=ev.setup.cache,
                                               log_dir=str(work.path))
