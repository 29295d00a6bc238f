"""varied_rows, the input law most tasks build on: the same seed gives the same bytes in fresh
storage, about heavy_frac of the rows carry outliers, and a shape of a few rows has them for some
seeds (each row is heavy with probability heavy_frac)."""
import pytest
import torch

from evaluator.tasks import TASKS
from evaluator.tasks.base import generator, varied_rows


def test_the_same_seed_gives_the_same_bytes_and_fresh_storage():
    a = varied_rows(generator(5, "cpu"), 64, 300, "cpu", 5)
    b = varied_rows(generator(5, "cpu"), 64, 300, "cpu", 5)
    assert torch.equal(a, b) and a.data_ptr() != b.data_ptr() and a.is_contiguous()
    assert not torch.equal(a, varied_rows(generator(6, "cpu"), 64, 300, "cpu", 6))


def test_about_heavy_frac_of_the_rows_carry_outliers():
    heavy = 0
    for seed in range(8):
        hits = varied_rows(generator(seed, "cpu"), 256, 4000, "cpu", 0, log_scale=0.0, offset=0.0)
        heavy += ((hits.abs() > 6).sum(dim=1) > 20).sum().item()
    # 2,048 rows at 1/8: 256 expected, a standard deviation of 15
    assert 190 < heavy < 320


@pytest.mark.parametrize("name", ["softmax", "layernorm", "gelu_bias_residual"])
def test_the_few_long_rows_shape_sometimes_has_outliers(name):
    """{"M": 3, "N": 20000} is the "very few long rows" edge case: about a third of its seeds
    have a heavy row."""
    task = TASKS[name]
    shape = {"M": 3, "N": 20000}
    with_outliers = 0
    for seed in range(24):
        x = task.make_inputs(shape, seed, "cpu")[0]
        z = (x - x.mean(dim=1, keepdim=True)) / x.std(dim=1, keepdim=True)
        with_outliers += bool(((z.abs() > 6).sum(dim=1) > 60).any())  # a heavy row: ~100; t(4) tails: <40
    assert with_outliers > 0
