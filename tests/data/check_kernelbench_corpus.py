"""Check the KernelBench-format corpus and the built-in tasks' solutions against what they claim.

    .venv/bin/python tests/data/check_kernelbench_corpus.py [--device cpu|cuda] [--only kernelbench|builtin]

Part 1, tests/data/kernelbench: every problem in EXPECTED.json is imported by path, Model is built
from get_init_inputs() and run on two draws of get_inputs(); the script prints the inputs' and the
output's shapes and dtypes and the time per call, and classifies what it sees (added, or refused
as broken / trivial_constant / trivial_insensitive / empty / too_fast / too_large / network) to
compare with EXPECTED.json. Three refusal kinds are not run as ordinary problems:
  - broken: only imported (the import must fail);
  - network: run with the socket module blocked, so no packet leaves (it must try to connect);
  - too_large: on a CPU run in a child process under an address-space limit, so the 10 TB
    allocation fails at once whatever the kernel's overcommit policy (on a GPU, in process).
Then every solutions/<name>/*.py: a ModelNew gets the reference's state_dict with strict=True, or
custom_kernel is called; correct_* must match within 1e-4 relative (max abs error over max |ref|),
wrong_* must be clearly off (above 1e-2 relative, or not finite), params_mismatch_* must raise in
load_state_dict.

Part 2, evaluator/tasks/builtin/<task>/solutions/{correct,wrong}/*.py: each custom_kernel is run on the
task's make_inputs at its fixed test shapes, its CPU bench shape and a few other shapes, and
judged with the task's own tolerance against reference_fp32, with the inputs checked for mutation
and the output for aliasing an input. correct/ must pass everywhere; wrong/ must fail somewhere;
the fixed_shapes_only ones must pass at every fixed shape and fail at every other one.

Plain torch apart from evaluator.tasks (part 2 only). Exit status 1 when anything disagrees.
"""
from __future__ import annotations

import argparse
import importlib.util
import itertools
import json
import os
import socket
import subprocess
import sys
import textwrap
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent / "kernelbench"
ROOT = HERE.parents[2]
BUILTIN = ROOT / "evaluator" / "tasks" / "builtin"

_args = argparse.ArgumentParser(description=__doc__.split("\n")[0])
_args.add_argument("--device", default=None, help="cpu or cuda (default: cuda when available)")
_args.add_argument("--only", choices=("kernelbench", "builtin"), default=None)
ARGS = _args.parse_args()

import torch  # noqa: E402

DEVICE = ARGS.device or ("cuda" if torch.cuda.is_available() else "cpu")
if DEVICE == "cpu":
    os.environ.setdefault("TRITON_INTERPRET", "1")  # before any solution imports triton

_counter = itertools.count()
DISAGREE: list[str] = []


def load(path: Path):
    """Import a file by path under a fresh module name."""
    spec = importlib.util.spec_from_file_location(f"corpus_mod_{next(_counter)}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def to_device(xs):
    return [x.to(DEVICE) if isinstance(x, torch.Tensor) else x for x in xs]


def sync():
    if DEVICE == "cuda":
        torch.cuda.synchronize()


def time_call(fn, *args, budget_s: float = 0.2, max_reps: int = 50) -> float:
    """Median seconds per call (after one warm-up)."""
    fn(*args)
    sync()
    times = []
    start = time.perf_counter()
    while len(times) < max_reps and (len(times) < 3 or time.perf_counter() - start < budget_s):
        t = time.perf_counter()
        fn(*args)
        sync()
        times.append(time.perf_counter() - t)
    return sorted(times)[len(times) // 2]


def describe(xs) -> str:
    return ", ".join(f"{tuple(x.shape)} {str(x.dtype).replace('torch.', '')}" if isinstance(x, torch.Tensor)
                     else repr(x) for x in xs)


def agree(label: str, ok: bool, detail: str) -> None:
    mark = "ok  " if ok else "FAIL"
    print(f"  [{mark}] {label}: {detail}")
    if not ok:
        DISAGREE.append(f"{label}: {detail}")


# ---- part 1: the KernelBench-format problems ----------------------------------------------------

class NetworkBlocked(Exception):
    pass


class block_network:
    """Within: any attempt to resolve or connect raises NetworkBlocked(host)."""

    def __enter__(self):
        self._saved = (socket.socket.connect, socket.create_connection, socket.getaddrinfo)

        def refuse(*args, **kwargs):
            target = next((a for a in args if isinstance(a, (str, tuple))), args)
            raise NetworkBlocked(f"blocked a connection to {target!r}")

        socket.socket.connect = lambda self, addr: refuse(addr)
        socket.create_connection = refuse
        socket.getaddrinfo = refuse
        return self

    def __exit__(self, *exc):
        socket.socket.connect, socket.create_connection, socket.getaddrinfo = self._saved
        return False


def run_in_child_with_memory_cap(path: Path, cap_bytes: int = 64 << 30) -> str:
    """Run the problem once in a child process whose address space is capped; return the last
    line it printed (the outcome)."""
    code = textwrap.dedent(f"""
        import importlib.util, resource, torch
        resource.setrlimit(resource.RLIMIT_AS, ({cap_bytes}, {cap_bytes}))
        spec = importlib.util.spec_from_file_location("p", {str(path)!r})
        m = importlib.util.module_from_spec(spec); spec.loader.exec_module(m)
        try:
            with torch.no_grad():
                out = m.Model(*m.get_init_inputs())(*m.get_inputs())
            print("RAN", tuple(out.shape))
        except (RuntimeError, MemoryError) as e:
            print("ALLOC_FAILED", type(e).__name__, str(e).splitlines()[0][:120])
    """)
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    lines = (proc.stdout.strip() or proc.stderr.strip() or "(no output)").splitlines()
    return lines[-1]


def classify_runnable(path: Path, module) -> tuple[str | None, str]:
    """(observed refusal or None, description) for a problem that imports."""
    torch.manual_seed(0)
    model = module.Model(*module.get_init_inputs()).to(DEVICE).eval()
    torch.manual_seed(1)
    in1 = to_device(module.get_inputs())
    torch.manual_seed(2)
    in2 = to_device(module.get_inputs())
    with torch.no_grad():
        out1 = model(*in1)
        out2 = model(*in2)
        per_call = time_call(model, *in1)
    info = (f"in [{describe(in1)}] -> out {tuple(out1.shape)} {str(out1.dtype).replace('torch.', '')}, "
            f"{per_call * 1e3:.3f} ms/call, params={len(model.state_dict())} state tensors")
    if out1.numel() == 0:
        return "empty", info
    a, b = out1.double(), out2.double()
    if torch.equal(a, b) and bool((a == a.flatten()[0]).all()):
        return "trivial_constant", info
    scale = float(a.square().mean().sqrt())
    change = float((a - b).abs().max()) / max(scale, 1e-30)
    info += f", change between draws {change:.1e} of the output's rms"
    if change < 1e-5:
        return "trivial_insensitive", info
    # on a GPU the ordinary problems also take tens of microseconds (launch overhead): there
    # only a tiny input counts as too fast
    tiny = sum(x.numel() for x in in1 if isinstance(x, torch.Tensor)) <= 1024
    if per_call < 50e-6 and (DEVICE == "cpu" or tiny):
        return "too_fast", info
    if per_call > 50e-3:
        info += "  (SLOWER than 50 ms)"
    return None, info


def check_problems(expected: dict) -> None:
    print(f"== KernelBench-format problems ({len(expected)}) on {DEVICE}")
    for rel, exp in expected.items():
        path = HERE / rel
        want = exp["why"]
        print(f"{rel}  ->  {exp['name']}  (expected {exp['outcome']}{'' if want is None else ', ' + want})")
        try:
            module = load(path)
        except Exception as e:  # SyntaxError, ModuleNotFoundError
            observed, info = "broken", f"import failed: {type(e).__name__}: {str(e).splitlines()[0]}"
            agree(rel, observed == want, f"{observed}; {info}")
            continue
        if not (module.Model.__doc__ or module.__doc__):
            agree(rel, False, "no docstring on Model or module")
        if want == "network":
            try:
                with block_network(), torch.no_grad():
                    inputs = module.get_inputs()
                    module.Model(*module.get_init_inputs())(*inputs)
                observed, info = None, "ran without touching the network"
            except NetworkBlocked as e:
                observed, info = "network", str(e)
            except Exception as e:  # urllib wraps the socket error in URLError
                cause = e
                while cause is not None and not isinstance(cause, NetworkBlocked):
                    cause = getattr(cause, "reason", None) or cause.__cause__ or cause.__context__
                observed = "network" if cause is not None else None
                info = f"{type(e).__name__}: {cause or e}"
            agree(rel, observed == want, f"{observed}; {info} (not run further: network)")
            continue
        if want == "too_large":
            if DEVICE == "cpu":
                line = run_in_child_with_memory_cap(path)
            else:
                try:
                    with torch.no_grad():
                        module.Model()(*to_device(module.get_inputs()))
                    line = "RAN"
                except torch.OutOfMemoryError as e:
                    line = f"ALLOC_FAILED OutOfMemoryError {str(e).splitlines()[0][:120]}"
            observed = "too_large" if line.startswith("ALLOC_FAILED") else None
            agree(rel, observed == want, f"{observed}; {line}")
            continue
        try:
            observed, info = classify_runnable(path, module)
        except Exception as e:
            observed, info = "error", f"{type(e).__name__}: {e}"
        has_params = bool(len(module.Model(*module.get_init_inputs()).state_dict()))
        ok = observed == want and has_params == exp["params"]
        agree(rel, ok, f"{observed or 'added'}; {info}")


def check_solutions(expected: dict) -> None:
    by_name = {v["name"]: k for k, v in expected.items()}
    print(f"\n== solutions on {DEVICE}")
    for sol_dir in sorted(p for p in (HERE / "solutions").iterdir() if p.is_dir()):
        rel = by_name.get(sol_dir.name)
        if rel is None:
            agree(sol_dir.name, False, "no problem of that name in EXPECTED.json")
            continue
        problem = load(HERE / rel)
        init = problem.get_init_inputs()
        print(f"{sol_dir.name}  ({rel})")
        for sol_path in sorted(sol_dir.glob("*.py")):
            kind = next(k for k in ("correct", "wrong", "params_mismatch") if sol_path.name.startswith(k))
            label = f"{sol_dir.name}/{sol_path.name}"
            torch.manual_seed(0)
            ref_model = problem.Model(*init).to(DEVICE).eval()
            torch.manual_seed(123)
            inputs = to_device(problem.get_inputs())
            saved = [x.clone() for x in inputs]
            with torch.no_grad():
                ref = ref_model(*inputs)
            sol = load(sol_path)
            if hasattr(sol, "ModelNew"):
                new = sol.ModelNew(*init)
                try:
                    new.load_state_dict(ref_model.state_dict(), strict=True)
                except RuntimeError as e:
                    msg = " ".join(str(e).split())[:150]
                    agree(label, kind == "params_mismatch", f"load_state_dict(strict=True) raised: {msg}")
                    continue
                fn = new.to(DEVICE).eval()
            else:
                fn = sol.custom_kernel
            if kind == "params_mismatch":
                agree(label, False, "load_state_dict(strict=True) did not raise")
                continue
            with torch.no_grad():
                out = fn(*inputs)
                sync()
            mutated = any(not torch.equal(a, b) for a, b in zip(inputs, saved))
            err = float((out.double() - ref.double()).abs().max()) if out.shape == ref.shape else float("inf")
            rel_err = err / max(float(ref.double().abs().max()), 1e-30)
            detail = f"max abs err {err:.3e}, relative {rel_err:.3e}" + (", MUTATED an input" if mutated else "")
            if kind == "correct":
                agree(label, rel_err <= 1e-4 and not mutated, detail)
            else:
                agree(label, not rel_err <= 1e-2, detail + " (clearly off)" if not rel_err <= 1e-2 else detail)


# ---- part 2: the built-in tasks' solutions ------------------------------------------------------

EXTRA_SHAPES = {
    "MN": [{"M": 5, "N": 37}, {"M": 129, "N": 1025}, {"M": 2, "N": 16384}],
    "MKN": [{"M": 5, "K": 37, "N": 19}, {"M": 129, "K": 65, "N": 257}, {"M": 64, "K": 512, "N": 96}],
    "BTDF": [{"B": 1, "T": 9, "D": 128, "F": 96}, {"B": 2, "T": 33, "D": 256, "F": 200}],
}
SEEDS = (11, 12, 13, 14)  # four seeds: make_inputs picks one of four input laws from the seed


def shares_storage(out: torch.Tensor, inputs) -> bool:
    ptr = out.untyped_storage().data_ptr()
    return any(isinstance(x, torch.Tensor) and x.untyped_storage().data_ptr() == ptr for x in inputs)


def run_task_solution(task, fn, shape, seed):
    """(passed, note) for one call at one shape and seed."""
    inputs = task.make_inputs(shape, seed, DEVICE)
    saved = tuple(x.clone() for x in inputs)
    gold = task.reference_fp32(*saved)
    try:
        out = fn(*inputs)
        sync()
    except Exception as e:
        return False, f"raised {type(e).__name__}"
    notes = []
    if any(not torch.equal(a, b) for a, b in zip(inputs, saved) if not a.isnan().any()):
        notes.append("mutated input")
    if shares_storage(out, inputs):
        notes.append("aliases input")
    if out.dtype != task.output_dtype or out.shape != gold.shape:
        notes.append(f"got {tuple(out.shape)} {out.dtype}")
        return False, "; ".join(notes)
    passed, err, worst = task.tolerance.compare(out, gold)
    if not passed:
        notes.append(f"mismatch (worst {worst:.3g}x the tolerance)")
    return passed and not notes, "; ".join(notes) or f"ok (worst {worst:.2g})"


def check_builtin() -> None:
    sys.path.insert(0, str(ROOT))
    from evaluator.tasks import get_task

    print(f"\n== built-in tasks' solutions on {DEVICE}")
    for task_dir in sorted(p for p in BUILTIN.iterdir() if p.is_dir()):
        task = get_task(task_dir.name)
        keys = "".join(task.test_shapes[0])
        fixed = list(task.test_shapes) + list(task.bench_shapes("cpu" if DEVICE == "cpu" else "cuda"))
        if DEVICE != "cpu":
            fixed += [s for s in task.bench_shapes_cpu if s not in fixed]
        others = EXTRA_SHAPES[keys]
        print(f"{task.name}: fixed shapes {len(fixed)}, other shapes {others}")
        for sol_path in sorted(task_dir.glob("solutions/*/*.py")):
            kind = sol_path.parent.name
            label = f"{task.name}/{kind}/{sol_path.name}"
            fn = load(sol_path).custom_kernel
            fails_fixed, fails_other = [], []
            for group, shapes in (("fixed", fixed), ("other", others)):
                for shape in shapes:
                    # the GPU bench shapes are large: one seed there
                    for seed in SEEDS[:1] if shape in task.bench_shapes_gpu else SEEDS:
                        passed, note = run_task_solution(task, fn, shape, seed)
                        if not passed:
                            where = fails_fixed if group == "fixed" else fails_other
                            where.append(f"{shape} seed {seed}: {note}")
            n_fixed = sum(1 if s in task.bench_shapes_gpu else len(SEEDS) for s in fixed)
            n_other = len(others) * len(SEEDS)
            detail = (f"fixed shapes failed {len(fails_fixed)}/{n_fixed}, other shapes failed "
                      f"{len(fails_other)}/{n_other}")
            first = (fails_fixed + fails_other)[:1]
            if first:
                detail += f"; first: {first[0]}"
            if kind == "correct":
                ok = not fails_fixed and not fails_other
            elif sol_path.stem == "fixed_shapes_only":
                ok = not fails_fixed and len(fails_other) == n_other
            else:
                ok = bool(fails_fixed or fails_other)
            agree(label, ok, detail)


def main() -> int:
    t0 = time.perf_counter()
    if ARGS.only in (None, "kernelbench"):
        expected = json.loads((HERE / "EXPECTED.json").read_text())
        check_problems(expected)
        check_solutions(expected)
    if ARGS.only in (None, "builtin"):
        check_builtin()
    print(f"\n{len(DISAGREE)} disagreement(s) in {time.perf_counter() - t0:.0f} s")
    for line in DISAGREE:
        print("  " + line)
    return 1 if DISAGREE else 0


if __name__ == "__main__":
    sys.exit(main())
