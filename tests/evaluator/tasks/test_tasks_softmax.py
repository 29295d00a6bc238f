"""evaluator/tasks/softmax.py: the reference on its own make_inputs at a small test shape is finite,
of the declared dtype and shape, within tolerance of the fp64 gold answer, and each row sums to one;
the inputs are deterministic per seed and the registry serves this module's TASK."""
import torch

from evaluator.tasks import get_task
from evaluator.tasks.folder import reference_module

softmax = reference_module("softmax")

SHAPE = {"M": 7, "N": 131}


def test_the_reference_on_its_own_inputs():
    (x,) = softmax.make_inputs(SHAPE, 5, "cpu")
    assert x.shape == (7, 131) and x.dtype == torch.float32
    out = softmax.reference(x)
    assert out.dtype == softmax.TASK.output_dtype and out.shape == (7, 131) and out.isfinite().all()
    assert torch.allclose(out.sum(dim=-1), torch.ones(7), atol=1e-5) and (out >= 0).all()
    passed, err, worst = softmax.TASK.tolerance.compare(out, softmax.reference_fp32(x))
    assert passed and err < 1e-5


def test_inputs_are_deterministic_per_seed_and_rows_vary_in_scale():
    a, b, c = (softmax.make_inputs({"M": 64, "N": 256}, s, "cpu")[0] for s in (1, 1, 2))
    assert torch.equal(a, b) and not torch.equal(a, c)
    spread = a.std(dim=1)
    assert spread.max() / spread.min() > 5  # log_scale 2.5: some rows nearly uniform, some nearly one-hot


def test_the_registry_and_the_module_agree():
    task = get_task("softmax")
    assert task is softmax.TASK and task.reference is softmax.reference
    assert task.flops(SHAPE) == 5 * 7 * 131 and task.bytes_moved(SHAPE) == 2 * 7 * 131 * 4
    assert dict(SHAPE) in [dict(s) for s in task.test_shapes]
