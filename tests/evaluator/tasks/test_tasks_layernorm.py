"""evaluator/tasks/layernorm.py: the reference on its own make_inputs at a small test shape is finite,
of the declared dtype and shape, within tolerance of the fp64 gold answer, and with weight one and
bias zero each row has mean zero and unit variance; inputs are deterministic per seed."""
import torch

from evaluator.tasks import get_task
from evaluator.tasks.folder import reference_module

layernorm = reference_module("layernorm")


def small_shape():
    return min(layernorm.TASK.test_shapes, key=lambda s: abs(s["M"] * s["N"] - 1000))


def test_the_reference_on_its_own_inputs():
    shape = small_shape()
    x, weight, bias = layernorm.make_inputs(shape, 5, "cpu")
    m, n = shape["M"], shape["N"]
    assert x.shape == (m, n) and weight.shape == (n,) and bias.shape == (n,)
    out = layernorm.reference(x, weight, bias)
    assert out.dtype == layernorm.TASK.output_dtype and out.shape == (m, n) and out.isfinite().all()
    passed, err, worst = layernorm.TASK.tolerance.compare(out, layernorm.reference_fp32(x, weight, bias))
    assert passed


def test_normalised_rows_have_mean_zero_and_unit_variance():
    x, _, _ = layernorm.make_inputs({"M": 16, "N": 512}, 3, "cpu")
    assert x.mean(dim=1).abs().max() > 0.5  # row means are off zero: the centring matters
    out = layernorm.reference(x, torch.ones(512), torch.zeros(512))
    assert out.mean(dim=1).abs().max() < 1e-4
    assert (out.var(dim=1, unbiased=False) - 1).abs().max() < 1e-3


def test_inputs_are_deterministic_per_seed():
    a, b, c = (layernorm.make_inputs({"M": 4, "N": 64}, s, "cpu") for s in (1, 1, 2))
    assert all(torch.equal(p, q) for p, q in zip(a, b)) and not torch.equal(a[0], c[0])
    assert get_task("layernorm") is layernorm.TASK
