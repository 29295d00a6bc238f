"""evaluator/common/_verify.py: the fast path's two Triton kernels, launched directly under Triton's
interpreter (in a child process: the interpreter is chosen when Triton is imported), against the
same sums computed by hand."""
import math
import textwrap

from evaluator.common import _verify
from interp_helpers import interpreted

SCRIPT = textwrap.dedent("""
    import json, math
    import torch
    from evaluator.common import _verify

    BLOCK = 8
    gold = torch.tensor([1.0, -2.0, 3.0, float("nan"), 0.5, float("inf"), -1.0, 2.0, 4.0, -3.0, 0.25])
    n = gold.numel()
    grid = -(-n // BLOCK)
    sums = torch.full((grid,), -1.0, dtype=torch.float64)
    bad = torch.full((grid,), -1, dtype=torch.int32)
    _verify.square_sum[(grid,)](gold, n, sums, bad, BLOCK=BLOCK)

    gold2 = torch.tensor([1.0, -2.0, 3.0, 10.0, 0.5, 1.0, -1.0, 2.0, 4.0, -3.0, 0.25])
    out = gold2.clone()
    out[2] += 0.5       # block 0: error 0.5 where |gold| = 3
    out[9] = float("nan")  # block 1: not finite, left out of the maxima
    out[8] += 0.1       # block 1: error 0.1 where |gold| = 4
    floor = torch.tensor([0.01])
    worst = torch.empty(grid); err = torch.empty(grid); bad2 = torch.empty(grid, dtype=torch.int32)
    _verify.worst_ratio[(grid,)](out, gold2, n, floor, 0.1, worst, err, bad2, BLOCK=BLOCK)
    print(json.dumps({"sums": sums.tolist(), "bad": bad.tolist(), "worst": worst.tolist(),
                      "err": err.tolist(), "bad2": bad2.tolist()}))
""")


def test_square_sum_and_worst_ratio_under_the_interpreter():
    got = interpreted(SCRIPT)
    assert got["sums"] == [1 + 4 + 9 + 0.25 + 1 + 4, 16 + 9 + 0.0625]  # NaN and inf left out
    assert got["bad"] == [2, 0]
    # allowed = floor + rtol * |gold|: 0.01 + 0.3 for the first block's error, 0.01 + 0.4 for the second's
    assert math.isclose(got["worst"][0], 0.5 / 0.31, rel_tol=1e-5)
    assert math.isclose(got["worst"][1], 0.1 / 0.41, rel_tol=1e-4)
    assert math.isclose(got["err"][0], 0.5, rel_tol=1e-6) and math.isclose(got["err"][1], 0.1, rel_tol=1e-4)
    assert got["bad2"] == [0, 1]


def test_the_kernels_take_their_arguments_in_the_order_fastcheck_passes_them():
    assert _verify.keyed_sum.arg_names == ["words", "n", "k1", "k2", "partial", "BLOCK"]
    assert _verify.square_sum.arg_names == ["gold", "n", "sums", "bad", "BLOCK"]
    assert _verify.worst_ratio.arg_names == ["out", "gold", "n", "floor", "rtol", "worst", "err_max", "bad", "BLOCK"]
