"""evaluator/common/fastgen.py: None on a CPU device (the torch path), Philox seeds drawn from the
caller's generator in the kernel's range, and under Triton's interpreter (a child process, _ready
patched) the same generator state gives the same matrix and varied_rows keeps its row scales."""
import textwrap

import torch

from evaluator.common import fastgen
from interp_helpers import interpreted


def test_a_cpu_device_takes_the_torch_path():
    g = torch.Generator().manual_seed(1)
    assert fastgen.signed_matrix(g, 4, 8, "cpu", 0) is None
    assert fastgen.varied_rows(g, 4, 8, "cpu", 0, log_scale=1.0, offset=0.0, heavy_frac=0.1, heavy_mag=10.0) is None


def test_seeds_come_from_the_generator_and_stay_above_two_to_the_32():
    seeds = fastgen._seeds(torch.Generator().manual_seed(7), "cpu", 64)
    assert seeds == fastgen._seeds(torch.Generator().manual_seed(7), "cpu", 64)
    assert seeds != fastgen._seeds(torch.Generator().manual_seed(8), "cpu", 64)
    assert all((1 << 32) <= s < (1 << 62) for s in seeds) and len(set(seeds)) == 64


SCRIPT = textwrap.dedent("""
    import json
    import torch
    from evaluator.common import fastgen

    fastgen._ready = lambda device: fastgen._load() is not None
    g = lambda s: torch.Generator().manual_seed(s)
    a = fastgen.signed_matrix(g(1), 8, 500, "cpu", 0)
    b = fastgen.signed_matrix(g(1), 8, 500, "cpu", 0)
    c = fastgen.signed_matrix(g(2), 8, 500, "cpu", 0)
    empty = fastgen.signed_matrix(g(1), 0, 500, "cpu", 0)
    rows = fastgen.varied_rows(g(3), 64, 400, "cpu", 1, log_scale=2.0, offset=0.0, heavy_frac=0.0, heavy_mag=0.0)
    std = rows.std(dim=1)
    print(json.dumps({"shape": list(a.shape), "dtype": str(a.dtype), "same": torch.equal(a, b),
                      "other": not torch.equal(a, c), "empty": list(empty.shape),
                      "std_min": float(std.min()), "std_max": float(std.max()), "finite": bool(rows.isfinite().all())}))
""")


def test_the_kernel_path_under_the_interpreter():
    got = interpreted(SCRIPT)
    assert got["shape"] == [8, 500] and got["dtype"] == "torch.float32" and got["empty"] == [0, 500]
    assert got["same"] and got["other"] and got["finite"]
    # row scales exp(U(-2, 2)): spreads from about e**-2 to e**2
    assert got["std_min"] < 0.3 and got["std_max"] > 3.0
