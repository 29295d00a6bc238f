"""evaluator/tasks/gelu_bias_residual.py: the reference on its own make_inputs at a small test shape
is finite, of the declared dtype and shape, within tolerance of the fp64 gold answer, and is the
exact (erf) GELU, not the tanh approximation; inputs are deterministic per seed."""
import torch

from evaluator.tasks import get_task
from evaluator.tasks.folder import reference_module

task_module = reference_module("gelu_bias_residual")


def test_the_reference_on_its_own_inputs():
    shape = min(task_module.TASK.test_shapes, key=lambda s: abs(s["M"] * s["N"] - 1000))
    x, bias, residual = task_module.make_inputs(shape, 5, "cpu")
    m, n = shape["M"], shape["N"]
    assert x.shape == residual.shape == (m, n) and bias.shape == (n,)
    out = task_module.reference(x, bias, residual)
    assert out.dtype == task_module.TASK.output_dtype and out.shape == (m, n) and out.isfinite().all()
    passed, err, worst = task_module.TASK.tolerance.compare(out, task_module.reference_fp32(x, bias, residual))
    assert passed


def test_the_reference_is_the_erf_gelu():
    x, bias, residual = task_module.make_inputs({"M": 16, "N": 256}, 3, "cpu")
    out = task_module.reference(x, bias, residual)
    y = (x + bias).double()
    erf = (0.5 * y * (1 + torch.erf(y / 2 ** 0.5)) + residual.double()).float()
    tanh = (torch.nn.functional.gelu(y, approximate="tanh") + residual.double()).float()
    assert torch.allclose(out, erf, atol=1e-5)
    # the inputs reach where the two differ: the tanh approximation fails the task's tolerance
    assert not task_module.TASK.tolerance.compare(tanh, task_module.reference_fp32(x, bias, residual))[0]


def test_inputs_are_deterministic_per_seed():
    a, b, c = (task_module.make_inputs({"M": 4, "N": 64}, s, "cpu") for s in (1, 1, 2))
    assert all(torch.equal(p, q) for p, q in zip(a, b)) and not torch.equal(a[0], c[0])
    assert get_task("gelu_bias_residual") is task_module.TASK
