"""evaluator/tasks/hidden.py: hidden test shapes are a function of the seed, differ between seeds,
stay inside the declared ranges and size cap, reach the edges (1, primes, odd sizes), keep listed
choices, and add one shape per adversarial family; a bad table is refused with its field named."""
import math

import pytest

from evaluator.tasks import get_task
from evaluator.tasks.hidden import from_table, is_prime

TABLE = {"count": 3, "max_elements": 1 << 20, "families": ["neg_inf"],
         "dims": {"M": [1, 4096], "N": [1, 20000], "D": {"choices": [128, 256]}},
         "cpu": {"count": 1, "max_elements": 4096, "dims": {"M": [1, 64]}}}


def test_draws_follow_the_seed_and_the_device():
    h = from_table(TABLE, "t", order=("M", "N", "D"))
    a, b, c = h.draw(1, "cuda"), h.draw(1, "cuda"), h.draw(2, "cuda")
    assert a == b and a != c
    assert len(a) == 4 and [s.get("family") for s in a] == [None, None, None, "neg_inf"]
    assert list(a[0]) == ["M", "N", "D"]
    cpu = h.draw(1, "cpu")
    assert len(cpu) == 2
    for s in cpu:
        assert 1 <= s["M"] <= 64 and math.prod(v for v in s.values() if isinstance(v, int)) <= 4096 * 256


def test_draws_stay_in_range_and_under_the_cap_and_reach_the_edges():
    h = from_table(TABLE, "t")
    values = []
    for seed in range(300):
        for s in h.draw(seed, "cuda"):
            assert 1 <= s["M"] <= 4096 and 1 <= s["N"] <= 20000 and s["D"] in (128, 256)
            assert s["M"] * s["N"] * s["D"] <= 1 << 20
            values += [s["M"], s["N"]]
    assert 1 in values
    assert sum(is_prime(v) for v in values) > len(values) // 5
    # odd sizes are non-multiples of every power-of-two block size
    assert sum(v % 2 for v in values) > len(values) // 2


def test_a_drawn_shape_is_neither_a_public_one_nor_a_repeat_where_the_ranges_allow():
    # four possible shapes, two of them public: the two drawn are the other two, whatever the seed
    h = from_table({"count": 2, "max_elements": 4, "dims": {"M": [1, 2], "N": [1, 2]}}, "t", order=("M", "N"))
    public = [{"M": 1, "N": 1}, {"M": 2, "N": 2}]
    for seed in range(50):
        assert sorted(map(tuple, (s.values() for s in h.draw(seed, "cuda", public)))) == [(1, 2), (2, 1)], seed
    # one possible shape: it is drawn anyway rather than nothing
    one = from_table({"count": 1, "max_elements": 1, "dims": {"M": [1, 1]}}, "t")
    assert one.draw(0, "cuda", [{"M": 1}]) == [{"M": 1}]


@pytest.mark.parametrize("bad, field", [
    ({"dims": {"M": [0, 5]}}, "M"), ({"dims": {"M": [9, 5]}}, "M"), ({"dims": {"M": {"choices": []}}}, "M.choices"),
    ({"dims": {"M": [1, 5]}, "count": 99}, "count"), ({"dims": {"M": [1, 5]}, "colour": 1}, "unknown keys"),
])
def test_a_bad_table_is_refused_naming_the_field(bad, field):
    with pytest.raises(ValueError, match=field.replace(".", r"\.")):
        from_table(bad, "softmax/task.toml: [hidden]")


def test_every_built_in_task_draws_hidden_shapes_and_families():
    for name in ("softmax", "layernorm", "gelu_bias_residual", "matmul_bias_relu", "transformer_block"):
        task = get_task(name)
        public = [dict(s) for s in task.test_shapes]
        shapes = task.test_shapes_for(7, "cpu")
        drawn = shapes[len(public):]
        assert shapes[:len(public)] == public and drawn, name
        assert {s.get("family") for s in drawn} - {None}, name
        for s in drawn:  # each drawn shape builds inputs the reference answers finitely somewhere
            inputs = task.make_inputs(s, 3, "cpu")
            gold = task.reference_fp32(*inputs)
            assert gold.isfinite().any() or gold.numel() == 0, (name, s)


def test_the_softmax_families_are_what_they_say():
    task = get_task("softmax")
    (x,) = task.make_inputs({"M": 9, "N": 300, "family": "neg_inf"}, 4, "cpu")
    assert (x == float("-inf")).any() and (x.isfinite().sum(dim=1) >= 1).all()
    (y,) = task.make_inputs({"M": 9, "N": 300, "family": "large_magnitude"}, 4, "cpu")
    assert y.abs().max() > 1e3
    # the naive formula overflows on it; the reference does not
    naive = y.exp() / y.exp().sum(dim=1, keepdim=True)
    assert not naive.isfinite().all() and task.reference(y).isfinite().all()
