"""evaluator/tasks/kernelbench.py: a KernelBench-style file loads as it is. Its name is normalised,
its constants split into those fixing the parameters and those the judge may rewrite, its
parameters drawn per seed, its gold in fp64; a ModelNew is loaded strictly (a mismatch names the
keys), a problem without parameters takes a custom_kernel; a file that cannot load says why."""
import textwrap

import pytest
import torch

from evaluator.tasks import EntryError
from evaluator.tasks.kernelbench import ProblemError, load, task_name

LINEAR = '''
import torch
import torch.nn as nn


class Model(nn.Module):
    """A linear layer, then tanh."""

    def __init__(self, in_features, out_features):
        super().__init__()
        self.fc = nn.Linear(in_features, out_features)

    def forward(self, x):
        return torch.tanh(self.fc(x))


batch_size = 24
in_features = 64
out_features = 32


def get_inputs():
    return [torch.randn(batch_size, in_features)]


def get_init_inputs():
    return [in_features, out_features]
'''

MASKED = '''
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x, mask):
        return torch.where(mask, x * 3.0, x)


rows = 40
cols = 300


def get_inputs():
    return [torch.randn(rows, cols), torch.rand(rows, cols) > 0.5]


def get_init_inputs():
    return []
'''


def problem(tmp_path, name, text):
    path = tmp_path / name
    path.write_text(textwrap.dedent(text))
    return load(path, "kernelbench-level1")


class Module:
    def __init__(self, **kw):
        self.__dict__.update(kw)


@pytest.mark.parametrize("stem, name", [("17_Masked-Scale", "17_masked_scale"), ("19_ReLU", "19_relu"),
                                        ("a..b  c", "a_b_c"), ("Gemm+Bias", "gemm_bias")])
def test_the_name_is_the_stem_lowercased_with_runs_replaced(stem, name):
    assert task_name(stem) == name


def test_a_problem_with_parameters(tmp_path):
    task = problem(tmp_path, "40_Linear-Tanh.py", LINEAR)
    assert task.name == "40_linear_tanh" and task.format == "kernelbench" and task.track == "kernelbench-level1"
    assert task.description == "A linear layer, then tanh." and "class ModelNew" in task.signature
    assert task.model.problem.fixed == {"in_features": 64, "out_features": 32}
    assert task.model.problem.free == {"batch_size": 24}
    assert task.input_names == ("x",) and task.output_dtype == torch.float32
    assert (task.tolerance.atol, task.tolerance.rtol) == (1e-4, 1e-4)
    # the flop counter sees the matmul: 2 * batch * in * out
    assert task.flops(task.bench_shapes_gpu[0]) == 2 * 24 * 64 * 32
    # parameters: the same per seed, different between seeds
    a, b, c = task.bind(5), task.bind(5), task.bind(6)
    assert all(torch.equal(a.model.state[k], b.model.state[k]) for k in a.model.state)
    assert not torch.equal(a.model.state["fc.weight"], c.model.state["fc.weight"])
    (x,) = a.make_inputs({"batch_size": 3, "in_features": 64, "out_features": 32}, 9, "cpu")
    assert x.shape == (3, 64)
    gold = a.reference_fp32(x)
    assert gold.dtype == torch.float64 and torch.allclose(gold.float(), a.reference(x), atol=1e-6)
    assert not torch.allclose(c.reference(x), a.reference(x))

    honest = Module(ModelNew=type("ModelNew", (torch.nn.Module,), {
        "__init__": lambda self, i, o: (torch.nn.Module.__init__(self), setattr(self, "fc", torch.nn.Linear(i, o)))[0],
        "forward": lambda self, x: torch.tanh(x @ self.fc.weight.t() + self.fc.bias)}))
    fn = a.entry(honest)
    assert a.tolerance.compare(fn(x), gold)[0]
    renamed = Module(ModelNew=type("ModelNew", (torch.nn.Module,), {
        "__init__": lambda self, i, o: (torch.nn.Module.__init__(self), setattr(self, "lin", torch.nn.Linear(i, o)))[0],
        "forward": lambda self, x: self.lin(x)}))
    with pytest.raises(EntryError) as e:
        a.entry(renamed)
    assert e.value.code == "params_mismatch"
    assert "missing keys ['fc.bias', 'fc.weight']" in str(e.value) and "unexpected keys ['lin.bias', 'lin.weight']" in str(e.value)
    with pytest.raises(EntryError) as e:
        a.entry(Module(custom_kernel=lambda x: x))
    assert e.value.code == "no_custom_kernel" and "ModelNew" in str(e.value)


def test_hidden_shapes_keep_the_parameters_shapes(tmp_path):
    task = problem(tmp_path, "p.py", LINEAR)
    drawn = task.test_shapes_for(3, "cuda")[len(task.test_shapes):]
    assert drawn and all(s["in_features"] == 64 and s["out_features"] == 32 for s in drawn)
    assert all(1 <= s["batch_size"] <= 24 for s in drawn)
    assert drawn != task.test_shapes_for(4, "cuda")[len(task.test_shapes):]


def test_a_problem_without_parameters_with_inputs_of_two_dtypes(tmp_path):
    task = problem(tmp_path, "3_masked.py", MASKED)
    assert task.model.problem.has_state is False and "def custom_kernel(x, mask)" in task.signature
    x, mask = task.make_inputs({"rows": 5, "cols": 7}, 1, "cpu")
    assert x.dtype == torch.float32 and mask.dtype == torch.bool and x.shape == (5, 7)
    assert torch.equal(task.make_inputs({"rows": 5, "cols": 7}, 1, "cpu")[0], x)
    fn = task.entry(Module(custom_kernel=lambda x, m: torch.where(m, 3 * x, x)))
    assert task.tolerance.compare(fn(x, mask), task.reference_fp32(x, mask))[0]
    assert not task.tolerance.compare(x, task.reference_fp32(x, mask))[0]


def test_overrides_beside_the_file(tmp_path):
    (tmp_path / "p.toml").write_text('title = "Linear + tanh"\n[tolerance]\natol = 0.5\nrtol = 0.25\n')
    task = problem(tmp_path, "p.py", LINEAR)
    assert task.title == "Linear + tanh" and (task.tolerance.atol, task.tolerance.rtol) == (0.5, 0.25)
    (tmp_path / "p.toml").write_text('colour = "red"\n')
    with pytest.raises(ProblemError, match="unknown keys"):
        problem(tmp_path, "p.py", LINEAR.replace("tanh", "sigmoid"))


@pytest.mark.parametrize("text, why", [
    ("import torch\nimport no_such_module_here\n", "No module named"),
    ("import torch\nclass Model(torch.nn.Module):\n    pass\n", "get_inputs"),
    (MASKED.replace("return torch.where(mask, x * 3.0, x)", "return (x, mask)"), "not one tensor"),
    (MASKED.replace("torch.randn(rows, cols)", "torch.randn(10, 10)").replace("torch.rand(rows, cols)", "torch.rand(10, 10)"),
     "no module-level integer"),
])
def test_a_file_that_cannot_load_says_why(tmp_path, text, why):
    with pytest.raises(ProblemError, match=why):
        problem(tmp_path, f"bad_{abs(hash(text))}.py", text)


def test_model_new_is_moved_to_the_device(tmp_path):
    """The judge's device reaches ModelNew: a module left on the CPU would meet CUDA inputs."""
    task = problem(tmp_path, "p.py", LINEAR).bind(3)

    class Honest(torch.nn.Module):
        def __init__(self, i, o):
            super().__init__()
            self.fc = torch.nn.Linear(i, o)

    fn = task.entry(Module(ModelNew=Honest), "meta")
    assert {p.device.type for p in fn.parameters()} == {"meta"}


def test_inputs_drawn_in_two_threads_at_once_are_those_drawn_alone(tmp_path):
    """The judge makes inputs in two threads (the compile beside the correctness phase): the
    module's constants and torch's generator are the process's, so draws take turns."""
    import threading

    task = problem(tmp_path, "p.py", LINEAR)
    shapes = [{"batch_size": b, "in_features": 64, "out_features": 32} for b in (3, 17)]
    alone = [task.make_inputs(s, 10 + i, "cpu")[0] for i, s in enumerate(shapes)]
    got, errors = {0: [], 1: []}, []

    def draw(i):
        try:
            for _ in range(200):
                got[i].append(task.make_inputs(shapes[i], 10 + i, "cpu")[0])
        except Exception as e:  # noqa: BLE001
            errors.append(e)

    threads = [threading.Thread(target=draw, args=(i,)) for i in (0, 1)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    assert all(torch.equal(x, alone[i]) for i in (0, 1) for x in got[i])
