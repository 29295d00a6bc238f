"""evaluator/tasks/triage.py and describe.py: each problem of a directory is described or refused
with its reason (broken, constant, insensitive, empty, too fast, network, too large), in one
process, and one broken file hides none of the others."""
import pytest

import problem_files
from evaluator.tasks.describe import describe
from evaluator.tasks.triage import triage


def test_the_triage_refuses_each_problem_with_its_reason(tmp_path):
    problem_files.write(tmp_path)
    got = triage([str(tmp_path)], "cpu")
    by_name = {r["name"]: r for r in got["results"]}
    assert [e["name"] for e in got["errors"]] == ["4_broken"] and "no_such_module_anywhere" in got["errors"][0]["error"]
    for name, why in problem_files.REFUSED.items():
        row = by_name[name]
        if why is None:
            assert row["ok"] and not row["reasons"], row
            assert row["readings"]["relative_change"] > 1e-2 and row["readings"]["reference_ms"] > 0.02
        else:
            assert not row["ok"] and why in " ".join(row["reasons"]), (name, row)


def test_describe_gives_what_the_site_stores(tmp_path):
    problem_files.write(tmp_path, ["level1/1_Scale-Tanh.py", "level1/4_broken.py", "level2/3_Linear_ReLU.py"])
    got = describe([str(tmp_path)])
    assert [e["name"] for e in got["errors"]] == ["4_broken"]
    rows = {r["name"]: r for r in got["tasks"]}
    linear = rows["3_linear_relu"]
    assert linear["track"] == "kernelbench-level2" and linear["format"] == "kernelbench" and linear["has_params"]
    assert linear["input_names"] == ["x"] and linear["output_dtype"] == "float32"
    assert linear["bench_shapes"]["cuda"] == [{"n_in": 256, "n_out": 256, "batch": 128}]
    assert linear["work"]["cuda"][0]["flops"] == 2 * 128 * 256 * 256
    assert linear["hidden"]["count"] >= 1 and "class Model" in linear["reference_source"]
    assert rows["1_scale_tanh"]["has_params"] is False and rows["1_scale_tanh"]["description"] == "torch.tanh(x * 1.5)"
    builtin = {r["name"]: r for r in describe([])["tasks"]}
    assert builtin["softmax"]["hidden"] == {"count": 3, "families": ["large_magnitude", "neg_inf"]}
    assert builtin["softmax"]["work"]["cuda"] == [{"flops": 5.0 * 8192 * 8192, "bytes": 2.0 * 8192 * 8192 * 4}]


FIXED_COST = '''
import torch
import torch.nn as nn


class Model(nn.Module):
    """x * 2 behind two hundred one-element operations: the call costs the same at every shape."""

    def forward(self, x):
        y = x[:1, :1]
        for _ in range(200):
            y = y + 0
        return x * 2 + y * 0


batch_size = 4
dim = 256


def get_inputs():
    return [torch.randn(batch_size, dim)]


def get_init_inputs():
    return []
'''


@pytest.mark.serial  # compares two times measured on this CPU: under the parallel part's load they read 1.7x apart
def test_a_cpu_reference_whose_time_does_not_grow_with_the_shape_is_too_fast(tmp_path):
    # above the absolute floor, yet mostly call overhead: its smallest test shape costs as much
    (tmp_path / "level1").mkdir()
    (tmp_path / "level1" / "1_fixed_cost.py").write_text(FIXED_COST)
    row = triage([str(tmp_path)], "cpu")["results"][0]
    readings = row["readings"]
    assert readings["reference_ms"] > 0.012, readings
    assert readings["reference_ms"] < 1.5 * readings["smallest_ms"], readings
    assert not row["ok"] and "overhead, not its work" in " ".join(row["reasons"]), row
