"""evaluator/common/fastcheck.py: both functions return None where they cannot run (a CPU tensor, a
size that is not whole words, a dtype they do not cover), and under Triton's interpreter (a child
process, _ready patched as the existing interpreter tests do) the fingerprint tells equal bytes from
changed ones and compare agrees with Tolerance.compare."""
import textwrap

import torch

from evaluator.common import fastcheck
from interp_helpers import interpreted


def test_cpu_tensors_take_the_torch_path():
    x = torch.randn(100)
    assert fastcheck.fingerprint(x, 12345) is None
    assert fastcheck.compare(x, x.clone(), 1e-4, 1e-4) is None


def test_grid():
    assert fastcheck.triton_grid(0) == 1
    assert fastcheck.triton_grid(1) == 1
    assert fastcheck.triton_grid(fastcheck.BLOCK) == 1
    assert fastcheck.triton_grid(fastcheck.BLOCK + 1) == 2


SCRIPT = textwrap.dedent("""
    import json
    import torch
    from evaluator.common import fastcheck
    from evaluator.tasks.base import Tolerance

    fastcheck._ready = lambda *t: fastcheck._load() is not None
    x = torch.randn(5000)
    y = x.clone()
    y.view(torch.int32)[4999] ^= 1
    gold = torch.randn(300)
    tol = Tolerance(atol=1e-3, rtol=1e-3)
    far = gold.clone()
    far[7] += 1.0
    print(json.dumps({
        "same": int(fastcheck.fingerprint(x, 77)) == int(fastcheck.fingerprint(x.clone(), 77)),
        "changed": int(fastcheck.fingerprint(y, 77)) != int(fastcheck.fingerprint(x, 77)),
        "empty": int(fastcheck.fingerprint(torch.empty(0), 77)),
        "odd": fastcheck.fingerprint(torch.zeros(3, dtype=torch.uint8), 77) is None,
        "close": list(fastcheck.compare(gold + 1e-6, gold, tol.atol, tol.rtol)),
        "far": list(fastcheck.compare(far, gold, tol.atol, tol.rtol)),
        "far_torch": list(tol.compare(far, gold)),
        "fp64_gold": fastcheck.compare(gold.double(), gold.double(), 1e-3, 1e-3) is None,
        "shape": fastcheck.compare(gold[:10], gold, 1e-3, 1e-3) is None,
    }))
""")


def test_fingerprint_and_compare_under_the_interpreter():
    got = interpreted(SCRIPT)
    assert got["same"] and got["changed"] and got["odd"] and got["fp64_gold"] and got["shape"]
    assert got["empty"] == 0
    nonfinite, passed, err, worst = got["close"]
    assert nonfinite == 0 and passed is True and err < 1e-5
    nonfinite, passed, err, worst = got["far"]
    assert nonfinite == 0 and passed is False and abs(err - 1.0) < 1e-5
    assert passed == got["far_torch"][0] and abs(worst - got["far_torch"][2]) <= 1e-4 * got["far_torch"][2]
