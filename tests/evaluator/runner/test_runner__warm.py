"""evaluator/runner/_warm.py: the runner's warm-up kernel, launched under Triton's interpreter (a
child process), adds one to the first n elements and leaves the rest alone."""
import textwrap

from evaluator.runner import _warm
from interp_helpers import interpreted

SCRIPT = textwrap.dedent("""
    import json
    import torch
    from evaluator.runner._warm import evaluator_warm

    x = torch.zeros(16)
    evaluator_warm[(1,)](x, 10, BLOCK=16)
    evaluator_warm[(1,)](x, 3, BLOCK=16)
    print(json.dumps({"x": x.tolist()}))
""")


def test_the_warm_kernel_touches_only_its_first_n_elements():
    got = interpreted(SCRIPT)
    assert got["x"] == [2.0] * 3 + [1.0] * 7 + [0.0] * 6


def test_the_warm_kernel_is_a_triton_function():
    assert _warm.evaluator_warm.arg_names == ["x_ptr", "n", "BLOCK"]
