"""evaluator/tasks/matmul_bias_relu.py: the bf16 reference on its own make_inputs at a small test
shape is finite, bf16 of shape [M, N], within tolerance of the fp32 gold answer, non-negative with a
fair share of zeros (relu) and of order one; inputs are deterministic per seed."""
import torch

from evaluator.tasks import get_task
from evaluator.tasks.folder import reference_module

matmul_bias_relu = reference_module("matmul_bias_relu")


def test_the_reference_on_its_own_inputs():
    shape = min(matmul_bias_relu.TASK.test_shapes, key=lambda s: abs(s["M"] * s["K"] * s["N"] - 200_000))
    a, b, bias = matmul_bias_relu.make_inputs(shape, 5, "cpu")
    m, k, n = shape["M"], shape["K"], shape["N"]
    assert a.shape == (m, k) and b.shape == (k, n) and bias.shape == (n,)
    assert a.dtype == b.dtype == bias.dtype == torch.bfloat16
    out = matmul_bias_relu.reference(a, b, bias)
    assert out.dtype == matmul_bias_relu.TASK.output_dtype == torch.bfloat16 and out.shape == (m, n)
    assert out.isfinite().all() and (out >= 0).all()
    gold = matmul_bias_relu.reference_fp32(a, b, bias)
    assert gold.dtype == torch.float32
    passed, err, worst = matmul_bias_relu.TASK.tolerance.compare(out, gold)
    assert passed


def test_relu_zeroes_a_fair_share_and_the_rest_is_of_order_one():
    a, b, bias = matmul_bias_relu.make_inputs({"M": 64, "K": 128, "N": 64}, 3, "cpu")
    out = matmul_bias_relu.reference(a, b, bias).float()
    zeros = (out == 0).float().mean()
    assert 0.1 < zeros < 0.9
    assert 0.1 < out[out > 0].mean() < 10


def test_inputs_are_deterministic_per_seed():
    x, y, z = (matmul_bias_relu.make_inputs({"M": 4, "K": 8, "N": 4}, s, "cpu") for s in (1, 1, 2))
    assert all(torch.equal(p, q) for p, q in zip(x, y)) and not torch.equal(x[0], z[0])
    assert get_task("matmul_bias_relu") is matmul_bias_relu.TASK
    assert matmul_bias_relu.TASK.flops({"M": 2, "K": 3, "N": 4}) >= 2 * 2 * 3 * 4
