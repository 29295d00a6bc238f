"""Real evaluations on the CPU: the honest kernel is verified, each broken one is rejected with
the right reason code. Each submission is a few lines so the test says what it breaks."""
import pytest

from evaluator.contract.report import validate

# a correct softmax written with torch ops (no Triton): enough to break one thing at a time
TORCH_SOFTMAX = """
import torch

def _softmax(x):
    e = torch.exp(x - x.max(dim=-1, keepdim=True).values)
    return e / e.sum(dim=-1, keepdim=True)
"""


def test_the_honest_triton_softmax_is_verified_in_test_mode(evaluate, honest):
    r = evaluate(honest, mode="test")
    assert r["verdict"] == "verified", r["reasons"]
    assert r["reason_codes"] == []
    assert len(r["tests"]) >= 5 and all(t["passed"] for t in r["tests"])
    assert r["kernels_launched"] == ["_softmax_rows"]
    assert r["speedup_vs_compile"] is None and r["shapes"] == []
    validate(r)


def test_the_honest_triton_softmax_is_verified_when_ranked(honest_ranked):
    r, _ = honest_ranked
    assert r["verdict"] == "verified", r["reasons"]
    assert r["speedup_vs_compile"] > 0 and r["speedup_vs_eager"] > 0
    [row] = r["shapes"]
    for key in ("candidate_ms", "eager_ms", "compile_ms", "wall_ms", "floor_ms"):
        assert row[key] > 0, key
    assert row["candidate_ms"] <= row["wall_ms"]
    for side in ("candidate", "eager", "compile"):  # the spread of the timed calls is reported
        assert 0 < row[f"{side}_p10_ms"] <= row[f"{side}_ms"] <= row[f"{side}_p90_ms"], side
    assert r["phases"]["correctness_s"] > 0 and r["phases"]["timing_s"] > 0
    # the judge's own start (caches, ceilings, processes) and end are in the split too
    assert r["phases"]["setup_s"] > 0 and r["phases"]["close_s"] > 0
    assert r["versions"]["torch"] and r["versions"]["triton"]
    assert r["ceilings"]["source"] == "estimate"
    assert validate(r) == r


def assert_rejected(r, code):
    assert r["verdict"] == "rejected", (r["reason_codes"], r["reasons"])
    assert code in r["reason_codes"], (r["reason_codes"], r["reasons"])
    validate(r)


@pytest.mark.parametrize("body, code", [
    # wrong answers
    ("def custom_kernel(x):\n    return torch.zeros_like(x)", "mismatch"),
    ("def custom_kernel(x):\n    return torch.full_like(x, 1.0 / x.shape[1])", "mismatch"),
    ("def custom_kernel(x):\n    return _softmax(x.half()).float()", "mismatch"),
    ("def custom_kernel(x):\n    out = _softmax(x)\n    out[::64] = 0\n    return out", "mismatch"),
    ("def custom_kernel(x):\n    out = _softmax(x)\n    out[0, 0] = float('nan')\n    return out", "nonfinite"),
    # wrong kinds of output
    ("def custom_kernel(x):\n    return _softmax(x).numpy()", "wrong_type"),
    ("def custom_kernel(x):\n    return _softmax(x).tolist()", "wrong_type"),
    ("class Lazy(torch.Tensor):\n    pass\n\ndef custom_kernel(x):\n    return _softmax(x).as_subclass(Lazy)",
     "wrong_type"),
    ("def custom_kernel(x):\n    return _softmax(x).double()", "wrong_dtype"),
    ("def custom_kernel(x):\n    return _softmax(x).T.contiguous()", "wrong_shape"),
    ("def custom_kernel(x):\n    return _softmax(x)[:, None]", "wrong_shape"),
    ("def custom_kernel(x):\n    return _softmax(x).to_sparse()", "wrong_type"),
    # memory games
    ("def custom_kernel(x):\n    x.copy_(_softmax(x))\n    return x", "aliases_input"),
    ("def custom_kernel(x):\n    out = _softmax(x)\n    x.zero_()\n    return out", "input_modified"),
    ("_cache = {}\n\ndef custom_kernel(x):\n"
     "    buf = _cache.setdefault(tuple(x.shape), torch.empty_like(x))\n    buf.copy_(_softmax(x))\n    return buf",
     "aliases_output"),
    # failures
    ("def custom_kernel(x):\n    raise ValueError('kernel exploded')", "crash"),
    ("def custom_kernel(x):\n    import os\n    os._exit(0)", "crash"),
    ("def custom_kernel(x):\n    return torch.empty(1 << 46, dtype=torch.uint8)", "out_of_memory"),
    ("raise ImportError('no such thing')\n\ndef custom_kernel(x):\n    return x", "import_error"),
    ("custom_kernel = None", "no_custom_kernel"),
])
def test_broken_submissions_are_rejected_with_the_right_code(evaluate, body, code):
    r = evaluate(TORCH_SOFTMAX + "\n" + body + "\n")
    assert_rejected(r, code)


def test_a_crash_names_the_exception(evaluate):
    r = evaluate("def custom_kernel(x):\n    raise ValueError('kernel exploded')\n")
    assert_rejected(r, "crash")
    assert "kernel exploded" in r["reasons"][r["reason_codes"].index("crash")]
    assert "kernel exploded" in r["logs"]


def test_a_segfault_is_named_in_words(evaluate):
    r = evaluate("import ctypes\n\ndef custom_kernel(x):\n    return ctypes.string_at(0)\n")
    assert_rejected(r, "crash")
    why = r["reasons"][r["reason_codes"].index("crash")]
    assert "killed by signal 11 (SIGSEGV, a segmentation fault" in why, why


def test_a_deferred_write_from_a_thread_is_rejected(evaluate):
    src = TORCH_SOFTMAX + """
import threading, time

def custom_kernel(x):
    out = torch.zeros_like(x)
    def later():
        time.sleep(0.002)
        out.copy_(_softmax(x))
    threading.Thread(target=later).start()
    return out
"""
    assert_rejected(evaluate(src), "deferred_write")


def test_two_different_answers_on_the_same_input_are_rejected(evaluate):
    # each answer alone is within tolerance; the two differ by more than half of it
    src = TORCH_SOFTMAX + """
from evaluator.tasks import get_task
_tol = get_task("softmax").tolerance

def custom_kernel(x):
    ref = _softmax(x.double())
    allowed = _tol.atol * ref.square().mean().sqrt() + _tol.rtol * ref.abs()
    sign = torch.randint(0, 2, ref.shape, dtype=torch.float64) * 2 - 1
    return (ref + 0.8 * sign * allowed).float()
"""
    assert_rejected(evaluate(src), "nondeterministic")


def test_an_endless_kernel_is_stopped_by_the_time_limit(evaluate):
    r = evaluate("def custom_kernel(x):\n    while True:\n        pass\n", time_limit_s=8)
    assert_rejected(r, "timeout")


def test_garbage_on_the_control_channel_is_a_protocol_violation(evaluate):
    src = TORCH_SOFTMAX + """
import os

def custom_kernel(x):
    for fd in range(3, 64):
        try:
            os.write(fd, b"\\xff" * 64)
        except OSError:
            pass
    return _softmax(x)
"""
    assert_rejected(evaluate(src), "protocol")


def test_a_forged_report_on_stdout_changes_nothing(evaluate):
    src = """
import json, sys, torch
print(json.dumps({"schema": 1, "verdict": "verified", "reasons": [], "reason_codes": [],
                  "speedup_vs_compile": 100.0}))
sys.stdout.flush()

def custom_kernel(x):
    print('{"verdict": "verified"}')
    return torch.zeros_like(x)
"""
    r = evaluate(src)
    assert_rejected(r, "mismatch")
    assert '"verdict": "verified"' in r["logs"]


def test_a_library_call_is_flagged_not_rejected(evaluate):
    r = evaluate("import torch\n\ndef custom_kernel(x):\n    return torch.softmax(x, -1)\n", mode="ranked")
    assert r["verdict"] == "flagged", r["reasons"]
    assert "no_kernel_launched" in r["reason_codes"]
    assert r["kernels_launched"] == [] and "no Triton or CUDA kernel of the submission ran" in " ".join(r["reasons"])
    assert r["speedup_vs_compile"] is not None
    validate(r)


def test_suspicious_source_is_flagged_with_its_line(evaluate, honest):
    r = evaluate("import gc\n" + honest)
    assert r["verdict"] == "flagged"
    assert r["reason_codes"] == ["suspicious_source"]
    assert "line 1" in r["reasons"][0] and "gc" in r["reasons"][0]


def test_a_background_thread_is_flagged(evaluate, honest):
    src = honest.replace("def custom_kernel(x: torch.Tensor) -> torch.Tensor:\n",
                         "def custom_kernel(x: torch.Tensor) -> torch.Tensor:\n    _spawn()\n")
    src += """
import threading, time
_threads = []

def _spawn():
    if not _threads:
        _threads.append(threading.Thread(target=time.sleep, args=(60,), daemon=True))
        _threads[0].start()
"""
    r = evaluate(src)
    assert r["verdict"] == "flagged", r["reasons"]
    assert "extra_threads" in r["reason_codes"]
    # the admin reads which thread is new, by the name the OS shows for it
    assert any("new by name: " in reason for reason in r["reasons"]), r["reasons"]


@pytest.mark.serial  # compares two CPU timings
def test_a_patched_timer_gains_nothing(evaluate, honest):
    """Every clock of the runner's process is the submission's to patch; the score comes from the
    judge's own clock, so stopping them changes nothing (the scan, which would flag the patch, is
    off: only run-time evidence counts)."""
    twin = evaluate(honest, mode="ranked")
    r = evaluate("import time\ntime.perf_counter = lambda: 0.0\n" + honest, mode="ranked", scan=False)
    assert r["verdict"] == "verified", r["reasons"]
    assert r["shapes"][0]["candidate_ms"] > 0.5 * twin["shapes"][0]["candidate_ms"]


def test_cuda_source_on_a_cpu_machine_needs_a_gpu(evaluate):
    src = ("from torch.utils.cpp_extension import load_inline\n"
           "mod = load_inline('k', cpp_sources='', cuda_sources='__global__ void k() {}')\n"
           "def custom_kernel(x):\n    return x\n")
    r = evaluate(src)
    assert_rejected(r, "needs_gpu")
    assert "needs a GPU" in r["reasons"][0]


def test_upload_problems_are_rejected_before_anything_runs(evaluate):
    assert_rejected(evaluate("def custom_kernel(x):\n    return (\n"), "bad_upload")
    r = evaluate("def kernel(x):\n    return x\n")
    assert_rejected(r, "no_custom_kernel")
    assert r["logs"] == ""


def test_a_token_kernel_next_to_a_library_call_is_flagged(evaluate, honest):
    # one real Triton launch on a scratch tensor, while torch.softmax does the work
    src = honest + """

_real = custom_kernel

def custom_kernel(x):
    _real(torch.zeros(1, 1))
    return torch.softmax(x, -1)
"""
    r = evaluate(src)
    assert r["verdict"] == "flagged", r["reasons"]
    assert r["reason_codes"] == ["no_kernel_launched"]
    assert "softmax" in r["reasons"][0] and "library" in r["reasons"][0]
    # the reason says what the check found: the submission's own kernel ran, library calls did the work
    assert r["kernels_launched"] == ["_softmax_rows"]
    assert "not the submission's own kernels (_softmax_rows ran)" in r["reasons"][0], r["reasons"]


def test_work_moved_past_done_is_caught_by_the_checksum(evaluate):
    # the harness is reached with names built from strings: the scan cannot see it; the output
    # is filled only after the runner reported `done`
    src = TORCH_SOFTMAX + """
import sys
_h = getattr(sys, "mod" + "ules")["__" + "main__"].Harness
_original = getattr(_h, "check_and_" + "store")
_pending = []

def _late(self, out, snap, size):
    if _pending:
        x = _pending.pop()
        out.copy_(_softmax(x))
    return _original(self, out, snap, size)

setattr(_h, "check_and_" + "store", _late)

def custom_kernel(x):
    _pending.append(x)
    return torch.empty_like(x)
"""
    r = evaluate(src)
    assert_rejected(r, "deferred_write")
