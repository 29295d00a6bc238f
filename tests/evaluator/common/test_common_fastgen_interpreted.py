"""The checker's fast input writer (evaluator/common/fastgen.py) run under Triton's interpreter on the CPU:
each seed gives its own bytes and the same bytes again, every input law keeps its shape (spread,
bounds, tails), varied_rows keeps its row scales and outliers, and the checker verifies a batch it
wrote this way (the fill and the verification build the same inputs). A subprocess, because the
interpreter is chosen when Triton is imported."""
import textwrap

from interp_helpers import interpreted

SCRIPT = textwrap.dedent("""
    import json
    import torch
    from evaluator.common import fastgen
    from evaluator.judge.checker import Checker
    from evaluator.tasks import base, get_task

    fastgen._ready = lambda device: fastgen._load() is not None
    got = {"laws": {}}

    def stats(x):
        x = x.double().flatten()
        c = x - x.mean()
        return {"mean": float(x.mean()), "std": float(x.std()), "min": float(x.min()), "max": float(x.max()),
                "kurtosis": float((c ** 4).mean() / (c ** 2).mean() ** 2)}

    with base.fast_inputs():
        for dist in range(base.N_DISTRIBUTIONS):
            x = base.signed_matrix(base.generator(3, "cpu"), 16, 2500, "cpu", dist)
            again = base.signed_matrix(base.generator(3, "cpu"), 16, 2500, "cpu", dist)
            other = base.signed_matrix(base.generator(4, "cpu"), 16, 2500, "cpu", dist)
            got["laws"][dist] = {**stats(x), "same": torch.equal(x, again), "other": not torch.equal(x, other)}
        plain = base.varied_rows(base.generator(5, "cpu"), 256, 2000, "cpu", 0, log_scale=0.0, offset=0.0)
        scaled = base.varied_rows(base.generator(5, "cpu"), 256, 2000, "cpu", 0, log_scale=2.0, offset=0.5)
    got["torch_path_differs"] = not torch.equal(x, base.signed_matrix(base.generator(3, "cpu"), 16, 2500, "cpu", 3))
    outliers = (plain.abs() > 6).sum(dim=1)
    got["rows"] = {"with_outliers": int((outliers > 0).sum()), "outliers": int(outliers.sum()),
                   "std_min": float(scaled.std(dim=1).min()), "std_max": float(scaled.std(dim=1).max())}

    task = get_task("softmax")
    checker = Checker(task, "cpu")
    plan = checker.plan({"M": 16, "N": 700})
    checker.use_buffer(torch.zeros(3 * plan["slot_bytes"], dtype=torch.uint8))
    checker.fill([11, 12, 13])
    written = checker.slot(0)[0].clone()
    outputs = [task.reference(*checker.slot(k)).view(torch.uint8).flatten() for k in range(3)]
    honest, _ = checker.verify(outputs, "batch")
    with base.fast_inputs():
        built = task.make_inputs({"M": 16, "N": 700}, 11, "cpu")[0]
    checker.slot(2)[0].view(torch.int32)[0, 5] ^= 1
    spoiled, _ = checker.verify(outputs, "batch")
    got["checker"] = {"drawn_fast": torch.equal(written, built), "honest": honest,
                      "spoiled": [p[0] for p in spoiled]}
    print(json.dumps(got))
""")


def test_fast_inputs_keep_their_laws_and_the_checker_verifies_them():
    got = interpreted(SCRIPT)
    kurtosis = {"0": (2.85, 3.15), "1": (1.75, 1.85), "2": (5.0, 7.5), "3": (8.0, 1e9)}  # normal .. student t
    for dist, law in got["laws"].items():
        assert law["same"] and law["other"], dist
        assert abs(law["mean"]) < 0.03 and 0.97 < law["std"] < 1.03, (dist, law)
        low, high = kurtosis[dist]
        assert low < law["kurtosis"] < high, (dist, law)
    assert -1.7321 < got["laws"]["1"]["min"] and got["laws"]["1"]["max"] < 1.7321
    assert got["torch_path_differs"]
    rows = got["rows"]
    # heavy rows: 1 in 8 on average (32 of 256), each with about 2 % of its values 8x larger
    assert 15 <= rows["with_outliers"] <= 50 and rows["outliers"] > 300, rows
    assert rows["std_min"] < 0.5 and rows["std_max"] > 2.0, rows  # row scales e^-2 .. e^2
    assert got["checker"] == {"drawn_fast": True, "honest": [], "spoiled": ["input_modified"]}
