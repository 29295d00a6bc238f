"""evaluator/common/_gen.py: the fast input writer's Triton kernel, launched directly under Triton's
interpreter (in a child process): the same seed gives the same bytes, a uniform draw stays in its
bounds with unit spread, the mask leaves memory past a row alone, and with ROWS each row is
(x + shift) * scale."""
import math
import textwrap

from evaluator.common import _gen
from interp_helpers import interpreted

SCRIPT = textwrap.dedent("""
    import json
    import torch
    from evaluator.common import _gen

    BLOCK, rows, cols, pad = 256, 6, 300, 50
    dummy = torch.empty(1)

    def draw(seed, dist, row_args=None):
        buf = torch.full((rows * cols + pad,), 1234.5)
        grid = (rows, -(-cols // BLOCK))
        if row_args is None:
            _gen.draw_rows[grid](buf, cols, seed, dist, dummy, dummy, dummy.view(torch.int32), 1 << 32, 0.0, 0.0,
                                 ROWS=False, BLOCK=BLOCK)
        else:
            scale, shift = row_args
            heavy = torch.zeros(rows, dtype=torch.int32)
            _gen.draw_rows[grid](buf, cols, seed, dist, scale, shift, heavy, (1 << 32) + 5, 0.02, 100.0,
                                 ROWS=True, BLOCK=BLOCK)
        return buf

    seed = (1 << 32) + 12345
    a, b, c = draw(seed, 1), draw(seed, 1), draw(seed + 1, 1)
    x = a[:rows * cols]
    normal = draw(seed, 0)[:rows * cols]
    scale = torch.tensor([1.0, 2.0, 0.5, 1.0, 3.0, 1.0])
    shift = torch.tensor([0.0, 1.0, -1.0, 10.0, 0.0, 0.0])
    scaled = draw(seed, 1, (scale, shift))[:rows * cols].view(rows, cols)
    expect = (x.view(rows, cols) + shift[:, None]) * scale[:, None]
    print(json.dumps({
        "same": torch.equal(a, b), "other": not torch.equal(a, c),
        "tail": a[rows * cols:].tolist() == [1234.5] * pad,
        "min": float(x.min()), "max": float(x.max()), "std": float(x.std()),
        "normal_std": float(normal.std()), "normal_mean": float(normal.mean()),
        "rows": torch.allclose(scaled, expect, rtol=1e-6, atol=1e-6),
    }))
""")


def test_draw_rows_under_the_interpreter():
    got = interpreted(SCRIPT)
    assert got["same"] and got["other"] and got["tail"]
    bound = math.sqrt(3)
    assert -bound <= got["min"] < -0.9 * bound and 0.9 * bound < got["max"] <= bound
    assert 0.9 < got["std"] < 1.1
    assert 0.9 < got["normal_std"] < 1.1 and abs(got["normal_mean"]) < 0.1
    assert got["rows"]


def test_draw_rows_takes_its_arguments_in_the_order_fastgen_passes_them():
    assert _gen.draw_rows.arg_names == ["out", "cols", "seed", "dist", "row_scale", "row_shift", "row_heavy",
                                        "spike_seed", "spike_rate", "heavy_mag", "ROWS", "BLOCK"]
