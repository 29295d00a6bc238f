"""The judge: trusted, never imports the submission. Builds inputs and gold answers itself, drives
the runner through the control channel, and computes the verdict from checked data. Ranked mode then times
the candidate against eager and torch.compile (run by a trusted baseline runner, baseline.py) in
batches on the judge's own clock (timed.py, batch.py), each runner stopped while the other is timed.
"""
from __future__ import annotations

import contextlib
import math
import os
import platform
import secrets
import stat
import time

from . import baseline, batch, channel, checks, compile_seed, isolation, report, runner_process, scan, timed, upload, workdir
from .checks import Failure

# per call: the first call on a shape may JIT-compile or autotune; later ones may not take long
FIRST_CALL_LIMIT_S = float(os.environ.get("EVALUATOR_FIRST_CALL_LIMIT_S", 120))
CALL_LIMIT_S = float(os.environ.get("EVALUATOR_CALL_LIMIT_S", 30))
PROBE_SLOWDOWN = 1.5  # GPU probe while the runner is stopped vs before it started
SETTLE_S = 0.01  # check calls: how long the runner waits for late writers before comparing
SMALL_SHAPES_CPU = 3  # on CPU only this many of the smallest test shapes are called twice / re-checked
BASELINES = ("eager", "compile")


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


def shape_size(shape: dict) -> int:
    return math.prod(v for v in shape.values() if isinstance(v, int))


def bench_shapes(task, device: str) -> list[dict]:
    """The timed shapes; with EVALUATOR_QUICK on CPU, one small test shape (fast unit tests)."""
    from .timing import quick

    if device == "cpu" and quick():
        small = sorted(task.test_shapes, key=shape_size)
        return [small[1] if len(small) > 1 else small[0]]
    return list(task.bench_shapes(device))


class Evaluation:
    def __init__(self, source: bytes, *, task: str, device: str, mode: str, time_limit_s: float = 300,
                 scan: bool = True):
        self.source = source
        self.scan = scan
        self.task_name = task
        self.device = device
        self.mode = mode
        self.time_limit_s = time_limit_s
        self.report = report.empty(task=task, mode=mode, device=device)
        self.codes: list[tuple[str, str]] = []
        self.master = secrets.randbits(63)
        self.runner = None
        self.work = None
        self.baseline = None
        self.base_work = None
        self._call_limit = FIRST_CALL_LIMIT_S
        self._calls = 0
        self.checkers = {}
        self.first_call_limit_s, self.call_limit_s = FIRST_CALL_LIMIT_S, CALL_LIMIT_S

    # ---- entry point -----------------------------------------------------------------------
    def run(self) -> dict:
        self.t0 = time.monotonic()
        self.deadline = self.t0 + self.time_limit_s
        threads = None
        try:
            if self.device == "cpu":
                threads = _single_thread()
            self._evaluate()
        except Failure as f:
            self.codes.extend(f.problems)
        finally:
            self._finish()
            if threads:
                torch.set_num_threads(threads)
        return self.report

    def _evaluate(self):
        problems = upload.check_upload(self.source)
        if problems:
            raise Failure(*problems)
        text = self.source.decode("utf-8")
        if self.device == "cpu" and scan.needs_gpu(text):
            raise Failure(("needs_gpu", "this submission compiles CUDA source (cpp_extension / "
                                        "load_inline) and needs a GPU; this machine has none"))
        for finding in scan.scan(text) if self.scan else ():
            self.codes.append(("suspicious_source", f"suspicious source: {finding}"))
        self._setup()
        self._start()
        self._correctness()
        if self.mode == "ranked":
            self._timing()
        self._stats()

    # ---- setup -----------------------------------------------------------------------------
    def _setup(self):
        cache = judge_cache_dir()
        if cache is None:
            import tempfile
            self._tmp_cache = tempfile.mkdtemp(prefix="evaluator-judge-")
            cache = self._tmp_cache
        os.environ["TORCHINDUCTOR_CACHE_DIR"] = os.path.join(cache, "inductor")
        os.environ["TRITON_CACHE_DIR"] = os.path.join(cache, "triton")
        self.cache = cache
        if not isolation.is_root():
            isolation.make_undumpable()
        global torch, timing
        import torch  # noqa: F811

        from . import timing  # noqa: F811
        from .tasks import base, get_task

        self.task = get_task(self.task_name)
        self.full_fp32 = getattr(base, "full_fp32", contextlib.nullcontext)
        self.derive = base.derive_seed
        import triton

        self.report["versions"] = {"python": platform.python_version(), "torch": torch.__version__,
                                   "triton": triton.__version__, "cuda": torch.version.cuda}
        if self.device == "cuda":
            torch.cuda.set_device(0)
            self.report["gpu_name"] = torch.cuda.get_device_name(0)
        self.quick = timing.quick() and self.device == "cpu"
        if self.device == "cuda":
            self.small_shapes = list(self.task.test_shapes)
        else:
            self.small_shapes = sorted(self.task.test_shapes, key=shape_size)[:SMALL_SHAPES_CPU]
        self.bench_shapes = bench_shapes(self.task, self.device)
        # measured before any submission code exists on this machine. GPU only: on a multi-core
        # CPU a busy background process need not slow the probe; there the tree-wide SIGSTOP is
        # the defence
        self.probe = timing.Probe(self.device) if self.device == "cuda" and self.mode == "ranked" else None
        if self.mode == "ranked":
            self.ceilings = self._ceilings()
            self.report["ceilings"] = dict(self.ceilings)
        self.work = workdir.Workdir(self.source)

    def _ceilings(self) -> dict:
        import json

        if self.device != "cuda":
            return timing.measure_ceilings("cpu")
        key = "".join(c if c.isalnum() else "_" for c in f"{self.report['gpu_name']}-{torch.__version__}")
        path = os.path.join(self.cache, f"ceilings-{key}.json")
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

    def _start(self):
        self.runner = runner_process.Runner(self.work, task=self.task_name, device=self.device)
        if self.mode == "ranked" and self.device == "cuda":
            self._start_checkers()
        if self.mode == "ranked":
            self._compile_baselines()
            # after the baseline compiled, before the submission loads: a torch.compile inside
            # the submission then picks the kernels the baseline runs (evaluator/compile_seed.py)
            try:
                self.report["compile_cache"] = compile_seed.seed(self.work, self.cache) \
                    if compile_seed.enabled() else "off (EVALUATOR_COMPILE_SEED=0)"
            except OSError as e:
                self.report["compile_cache"] = f"not copied: {e}"[:200]
        t = time.monotonic()
        try:
            hello = self._expect("hello", self.deadline)
        except Failure as f:
            # nothing of the submission has run yet: this is the evaluator's failure, not a verdict
            raise RuntimeError(f"the runner failed to start ({f}); its stderr:\n"
                               + workdir.logs(self.work)[-4000:]) from None
        notes = hello.get("notes") if isinstance(hello.get("notes"), list) else []
        self.threads_base = self.runner.thread_count()
        # sent before the submission exists, so trusted: threads one profiler session starts
        growth = hello.get("profiler_growth")
        self.profiler_growth = growth if isinstance(growth, int) and 0 <= growth <= 4 else 0
        for checker in self.checkers.values():
            checker.call("ping")  # non-dumpable and answering before the submission exists
        self._send({"op": "load"})
        self._expect("ready", self.deadline)
        # the runner starts while the judge compiles: count only the time spent waiting for it
        self.report["phases"]["startup_s"] = time.monotonic() - t
        status = self.runner.status()
        iso = {"judge_uid": os.geteuid(), **status}
        iso["separate_user"] = status.get("runner_uid", os.geteuid()) != os.geteuid()
        iso["note"] = "; ".join(str(n) for n in notes)[:250] or (
            "" if iso["separate_user"] else "the runner shares the judge's uid (the judge is not root)")
        self.report["isolation"] = iso
        self._check_threads("after the submission was imported")

    def _compile_baselines(self):
        """Start the trusted baseline runner (its source is generated from the task name alone; the
        submission never reaches it), compile torch.compile on every benchmark shape in it, check
        one output of each against the gold answer, and leave it stopped until it is timed."""
        t = time.monotonic()
        self.base_work = baseline.Workdir(self.task_name)
        self.baseline = baseline.Runner(self.base_work, task=self.task_name, device=self.device,
                                        cache=self.cache)
        self.baseline.expect("hello", self.deadline)
        self.baseline.send({"op": "load"})
        self.baseline.expect("ready", self.deadline)
        self._out_shapes = {}
        for i, shape in enumerate(self.bench_shapes):
            for fn in BASELINES:
                self._base_call(fn, shape, self.derive(self.master, "warm", i, fn), check=True, first=True)
        self.baseline.stop()
        self.report["phases"]["compile_s"] = time.monotonic() - t

    # ---- the channel -------------------------------------------------------------------------
    def _send(self, msg: dict) -> None:
        try:
            channel.send(self.runner.to_runner, msg)
        except (BrokenPipeError, OSError):
            raise self._exited() from None

    def _expect(self, kind: str, deadline: float) -> dict:
        try:
            msg = channel.recv(self.runner.from_runner, min(deadline, self.deadline))
        except channel.Timeout:
            self.runner.kill()
            if time.monotonic() >= self.deadline - 0.01:
                raise Failure(("timeout", f"the evaluation took longer than its limit of "
                                          f"{self.time_limit_s:g} s")) from None
            raise Failure(("timeout", "a call to custom_kernel took longer than its limit "
                                      f"({self._call_limit:g} s)")) from None
        except channel.Closed:
            raise self._exited() from None
        except channel.ProtocolError as e:
            raise checks.protocol(str(e)) from None
        t = msg.get("t")
        if t == "error":
            raise checks.runner_error(msg)
        if t != kind:
            raise checks.protocol(f"expected {kind!r}, got {str(t)[:40]!r}")
        return msg

    def _exited(self) -> Failure:
        status = self.runner.exit_status()
        if status is None:
            self.runner.kill()
            return checks.protocol("the runner closed the channel")
        if status == -9 and not self.runner.killed_by_judge:
            return Failure(("out_of_memory", "the runner was killed by signal 9 (SIGKILL): probably "
                                             "out of memory"))
        if status < 0:
            return Failure(("crash", f"the runner was killed by signal {-status}"))
        return Failure(("crash", f"the runner exited with status {status} before the evaluation "
                                 "finished (no complete result)"))

    # ---- one call ----------------------------------------------------------------------------
    def _call(self, shape: dict, seed: int, where: str, *, check: bool = False, keep: bool = False,
              profile: bool = False, first: bool = False):
        """Gold answer in the judge, the call in the runner, every check on the returned bytes.
        Every call's output is also compared with a copy taken the moment it returned (the
        runner's `snap`; check calls wait 10 ms for late host threads first, `settle`): work left
        running on another stream that writes the answer is a deferred write, timed call or not.
        Returns (output, runner ms, judge wall ms)."""
        task, device = self.task, self.device
        inputs = task.make_inputs(shape, seed, device)
        with self.full_fp32():
            gold = task.reference_fp32(*inputs)
        timing.sync(device)
        dtype = task.output_dtype
        out_bytes = gold.numel() * torch.empty((), dtype=dtype).element_size()
        in_bytes = [x.numel() * x.element_size() for x in inputs] if check else []
        size = self.work.ensure_buffer(out_bytes + sum(in_bytes))
        self._call_limit = FIRST_CALL_LIMIT_S if first else CALL_LIMIT_S
        limit = time.monotonic() + self._call_limit
        t = time.perf_counter()
        self._send({"op": "prepare", "shape": dict(shape), "seed": seed, "snap": True,
                    "settle": SETTLE_S if check else 0.0, "back": check, "keep": keep,
                    "profile": profile, "size": size})
        prepared = self._expect("prepared", limit)
        self._prepare_ms = (time.perf_counter() - t) * 1e3
        if check:
            # the inputs as the runner built them, before any submission code saw them
            if prepared.get("stored") is not True:
                raise checks.protocol("the runner did not store its inputs")
            data = self._snapshot(sum(in_bytes))
            offset = 0
            for x, n in zip(inputs, in_bytes):
                built = checks.from_bytes(data[offset:offset + n], x.dtype, tuple(x.shape), device)
                if not checks.same_bytes(built, x):
                    raise Failure(("input_modified", f"{where}: the runner's inputs differ from the "
                                                     "judge's before the call: the submission tampered "
                                                     "with how inputs are made"))
                offset += n
        self._calls += 1
        key = self.derive(self.master, "checksum", self._calls)
        t = time.perf_counter()
        self._send({"op": "go", "size": size, "key": key})
        done = self._expect("done", limit)
        wall = (time.perf_counter() - t) * 1e3
        ms = checks.number(done, "ms")
        claimed = done.get("fp")
        if claimed is not None and (isinstance(claimed, bool) or not isinstance(claimed, int)):
            raise checks.protocol("'fp' must be an integer")
        result = self._expect("result", limit)
        problems = checks.result_problems(result)
        if problems:
            raise Failure(*[(c, f"{where}: {m}") for c, m in problems])
        checks.check_meta(result, dtype=dtype, shape=tuple(gold.shape), device=device, where=where)
        if result.get("stored") is not True:
            raise checks.protocol("the runner did not store the output")
        data = self._snapshot(out_bytes + sum(in_bytes))
        out = checks.from_bytes(data[:out_bytes], dtype, tuple(gold.shape), device)
        t = time.perf_counter()
        actual = checks.fingerprint(checks.raw_bytes(out), key)
        checksum_ms = (time.perf_counter() - t) * 1e3
        if claimed != actual:
            raise Failure(("deferred_write", f"{where}: the output stored after the call is not the "
                                             "output the call returned (work done after it returned)"))
        err = checks.compare(out, gold, task.tolerance, where)
        offset = out_bytes
        for x, n in zip(inputs, in_bytes):
            back = checks.from_bytes(data[offset:offset + n], x.dtype, tuple(x.shape), device)
            if not checks.same_bytes(back, x):
                raise Failure(("input_modified", f"{where}: custom_kernel modified its input tensors"))
            offset += n
        return out, ms, wall, err, checksum_ms

    def _snapshot(self, nbytes: int, work=None):
        """The first nbytes of the shared buffer, copied into the judge's own staging memory
        (page-locked on the GPU, so that the copy to the device is one fast DMA)."""
        staging = getattr(self, "_staging", None)
        if staging is None or staging.numel() < nbytes:
            staging = torch.empty(max(nbytes, 1 << 20), dtype=torch.uint8, pin_memory=self.device == "cuda")
            self._staging = staging
        view = staging[:nbytes]
        if nbytes and (work or self.work).read_buffer(view.numpy()) != nbytes:
            raise checks.protocol("the output buffer is shorter than the output")
        return view

    # ---- phases ------------------------------------------------------------------------------
    def _correctness(self):
        t = time.monotonic()
        tests = self.report["tests"]
        for i, shape in enumerate(self.task.test_shapes):
            where = f"test shape {_fmt(shape)}"
            seed = self.derive(self.master, "test", i)
            try:
                out, _, _, err, _ = self._call(shape, seed, where, check=True, keep=True, first=True)
                if shape in self.small_shapes:
                    again, _, _, _, _ = self._call(shape, seed, where + " (second call, same input)",
                                                check=True, keep=True)
                    if not checks.deterministic(out, again, self.task.tolerance):
                        raise Failure(("nondeterministic", f"{where}: two calls on the same input "
                                                           "returned different answers"))
            except Failure as f:
                tests.append({"shape": dict(shape), "passed": False, "max_abs_err": None,
                              "message": f.problems[0][1][:1000]})
                raise
            tests.append({"shape": dict(shape), "passed": True, "max_abs_err": _finite(err), "message": ""})
        # one call recording which operators and kernels ran (a middle-sized shape: big enough
        # that a library call shows, small enough for the CPU interpreter)
        shape = sorted(self.task.test_shapes, key=shape_size)[len(self.task.test_shapes) // 2]
        out, _, _, _, _ = self._call(shape, self.derive(self.master, "profile"), f"test shape {_fmt(shape)}",
                                     keep=True, profile=True)
        self.threads_base += self.profiler_growth
        self.profiled = (shape, out.numel())
        self._send({"op": "release"})
        self._expect("released", time.monotonic() + CALL_LIMIT_S)
        self._check_threads("during the correctness calls")
        self.report["phases"]["correctness_s"] = time.monotonic() - t

    def _start_checkers(self):
        """GPU: one checker process per runner, of that runner's uid (CUDA IPC fails across
        users), started before any submission code exists (batch.py, checker.py)."""
        self.checkers["cand"] = batch.CheckerProcess(self.task_name, uid=self.work.uid,
                                                     cache=self.work.private_dir(), log_dir=str(self.work.path))
        self.checkers["base"] = batch.CheckerProcess(self.task_name, uid=os.getuid(), cache=self.cache,
                                                     log_dir=str(self.work.path))

    def _timing(self):
        t = time.monotonic()
        if self.device != "cuda":
            self.checkers = {"cand": batch.LocalChecker(self.task, self.work),
                             "base": batch.LocalChecker(self.task, self.base_work)}
        b = self.baseline
        sides = {"cand": batch.Side("cand", runner=self.runner, send=self._send, expect=self._expect,
                                    checker=self.checkers["cand"], work=self.work)}
        for fn in BASELINES:
            sides[fn] = batch.Side(fn, runner=b, send=b.send, expect=b.expect, checker=self.checkers["base"],
                                   work=self.base_work, fn=fn)
        self.runner.stop()
        try:
            self.report["shapes"] = timed.Phase(self, sides, self.checkers).run()
        finally:
            self.runner.cont()
        self.report["timing_gate"] = ("judge's clock over batches of calls; overhead from the trusted "
                                      "baseline runner's own clock")
        self._recheck()
        self.report["phases"]["timing_s"] = time.monotonic() - t

    def note_call_limit(self, first: bool) -> None:
        self._call_limit = FIRST_CALL_LIMIT_S if first else CALL_LIMIT_S

    def check_threads(self, when: str) -> None:
        self._check_threads(when)

    def short_of_time(self) -> bool:
        return self._short_of_time()

    def _recheck(self):
        """Fresh inputs on the test shapes after timing, called exactly like timed calls."""
        for i, shape in enumerate(self.small_shapes):
            self._call(shape, self.derive(self.master, "recheck", i), f"re-check on test shape {_fmt(shape)}")
            with self._stopped():
                pass
        self._check_threads("after timing")

    @contextlib.contextmanager
    def _stopped(self):
        self.runner.stop()
        try:
            if self.probe:
                self.probe.sample()
            yield
        finally:
            self.runner.cont()

    def _base_call(self, fn: str, shape: dict, seed: int, *, check: bool = False, first: bool = False):
        """One call of a baseline in the baseline runner, through the candidate's protocol: prepare,
        go, done, result. Its output is trusted (it is the reference), but bound by the same checksum
        and, on check calls, compared with the gold answer. Returns (runner ms, wall ms, checksum
        ms). Any failure here is the evaluator's, not the submission's (BaselineError)."""
        task, device, b = self.task, self.device, self.baseline
        key = (fn, tuple(sorted(shape.items())))
        gold = None
        if check or key not in self._out_shapes:
            inputs = task.make_inputs(shape, seed, device)
            with self.full_fp32():
                gold = task.reference_fp32(*inputs)
            timing.sync(device)
            self._out_shapes[key] = tuple(gold.shape)
        out_shape = self._out_shapes[key]
        dtype = task.output_dtype
        out_bytes = math.prod(out_shape) * torch.empty((), dtype=dtype).element_size()
        size = self.base_work.ensure_buffer(out_bytes)
        limit = time.monotonic() + (FIRST_CALL_LIMIT_S if first else CALL_LIMIT_S)
        t = time.perf_counter()
        # the same copy at return as the candidate's calls make: it lies between the stream event
        # and the end event, so both sides' after-stream gaps hold it alike
        b.send({"op": "prepare", "shape": dict(shape), "seed": seed, "snap": True, "settle": 0.0,
                "back": False, "keep": False, "profile": False, "size": size, "fn": fn})
        b.expect("prepared", limit)
        self._prepare_ms = (time.perf_counter() - t) * 1e3
        self._calls += 1
        fp_key = self.derive(self.master, "checksum", self._calls)
        t = time.perf_counter()
        b.send({"op": "go", "size": size, "key": fp_key})
        done = b.expect("done", limit)
        wall = (time.perf_counter() - t) * 1e3
        result = b.expect("result", limit)
        ms = done.get("ms")
        if (not isinstance(ms, (int, float)) or isinstance(ms, bool) or not math.isfinite(ms) or ms < 0
                or result.get("problems") or result.get("stored") is not True
                or list(result.get("shape") or []) != list(out_shape)):
            raise b.error(f"{fn} on {_fmt(shape)}: done={done!r:.200} result={result!r:.300}")
        data = self._snapshot(out_bytes, self.base_work)
        out = checks.from_bytes(data[:out_bytes], dtype, out_shape, device)
        t = time.perf_counter()
        actual = checks.fingerprint(checks.raw_bytes(out), fp_key)
        checksum_ms = (time.perf_counter() - t) * 1e3
        if done.get("fp") != actual:
            raise b.error(f"{fn} on {_fmt(shape)}: the stored output does not match its checksum")
        if gold is not None:
            try:
                checks.compare(out, gold, task.tolerance, f"{fn} baseline on {_fmt(shape)}")
            except Failure as f:
                raise b.error(f"{fn} differs from the gold answer: {f.problems[0][1]}") from None
        return ms, wall, checksum_ms

    def _short_of_time(self) -> bool:
        return self.deadline - time.monotonic() < 0.25 * self.time_limit_s

    # ---- watching the runner -----------------------------------------------------------------
    def _check_threads(self, when: str):
        if any(c == "extra_threads" for c, _ in self.codes):
            return
        now = self.runner.thread_count()
        if now > self.threads_base:
            self.codes.append(("extra_threads", f"the runner had {self.threads_base} threads before the "
                                                f"submission was imported and {now} {when}"))

    def _stats(self):
        self._send({"op": "stats"})
        stats = self._expect("stats", time.monotonic() + CALL_LIMIT_S)
        triton_names = [checks.text(n, 200) for n in stats.get("triton", []) or [] if isinstance(n, str)][:32]
        cuda_names = checks.user_cuda_kernels(stats.get("cuda", []) or [])
        names = list(dict.fromkeys(triton_names + [checks.text(n, 200) for n in cuda_names]))[:64]
        self.report["kernels_launched"] = names
        if not names:
            self.codes.append(("no_kernel_launched", "no Triton or CUDA kernel of the submission ran "
                                                     "(library calls only?)"))
        else:
            library = self._library_work(stats.get("aten"))
            if library:
                self.codes.append(("no_kernel_launched", "the work is done by library calls, not by the "
                                                         "submission's kernels: " + "; ".join(library[:4])))
        slowdown = self.probe.slowdown() if self.probe else 1.0
        if slowdown > PROBE_SLOWDOWN:
            self.codes.append(("extra_threads", f"the {self.device} was busy while the runner was "
                                                f"stopped: a fixed probe ran {slowdown:.1f}x slower than "
                                                "before the run (work left running in the background)"))
        self._send({"op": "exit"})

    def _library_work(self, aten) -> list[str]:
        from . import opcount

        if not isinstance(aten, dict) or not hasattr(self, "profiled"):
            return []
        ops = {}
        for name, rec in list(aten.items())[:64]:
            if (isinstance(name, str) and isinstance(rec, list) and len(rec) == 3
                    and all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in rec)):
                ops[name[:64]] = rec
        shape, out_numel = self.profiled
        return opcount.library_work(ops, out_numel=out_numel, task_flops=self.task.flops(shape))

    # ---- the report --------------------------------------------------------------------------
    def _finish(self):
        if self.runner is not None:
            self.runner.close()
        if self.baseline is not None:
            self.baseline.close()
        for checker in self.checkers.values():
            checker.close()
        if self.base_work is not None:
            self.base_work.remove()
        if self.work is not None:
            self.report["logs"] = workdir.logs(self.work)
            self.work.remove()
        if getattr(self, "_tmp_cache", None):
            import shutil
            shutil.rmtree(self._tmp_cache, ignore_errors=True)
        seen, codes = set(), []
        for code, message in self.codes:
            if (code, message) not in seen:
                seen.add((code, message))
                codes.append((code, message))
        codes = codes[:report.MAX_REASONS]
        r = self.report
        r["reason_codes"] = [c for c, _ in codes]
        r["reasons"] = [m[:report.MAX_TEXT] for _, m in codes]
        r["verdict"] = report.verdict_for(r["reason_codes"])
        if r["verdict"] == "rejected" or self.mode == "test":
            r["shapes"] = [] if r["verdict"] == "rejected" else r["shapes"]
        elif r["shapes"]:
            r["speedup_vs_compile"] = _finite(timing.geomean([s["speedup_vs_compile"] for s in r["shapes"]]))
            r["speedup_vs_eager"] = _finite(timing.geomean([s["speedup_vs_eager"] for s in r["shapes"]]))
            limit = self.task.max_speedup_vs_compile
            sc = r["speedup_vs_compile"]
            if sc and sc > limit and "too_fast_vs_compile" not in r["reason_codes"]:
                r["reason_codes"].append("too_fast_vs_compile")
                r["reasons"].append(f"{sc:.2f}x faster than torch.compile overall (above {limit:g}x)")
                r["verdict"] = report.verdict_for(r["reason_codes"])
        for row in r["shapes"]:
            for key, value in row.items():
                if isinstance(value, float):
                    row[key] = _finite(value)


def _single_thread() -> int:
    """CPU timing runs on one thread on both sides: on small shared machines a thread pool's
    wake-up costs a scheduler slice (about 10 ms), which buried every small kernel."""
    global torch
    import torch  # noqa: F811

    before = torch.get_num_threads()
    torch.set_num_threads(1)
    return before


def _finite(x):
    return float(x) if x is not None and math.isfinite(x) else None


def _fmt(shape: dict) -> str:
    return "{" + ", ".join(f"{k}={v}" for k, v in shape.items()) + "}"


def evaluate(source: bytes, *, task: str, device: str, mode: str = "ranked", time_limit_s: float = 300,
             scan: bool = True) -> dict:
    return Evaluation(source, task=task, device=device, mode=mode, time_limit_s=time_limit_s, scan=scan).run()
