"""The two heavy examples (matmul_bias_relu, transformer_block) match the fp32 gold.

On the CPU they run under the Triton interpreter in a child process (TRITON_INTERPRET must be
set before triton is imported, and this test process may already have imported it). The child
checks every task test shape plus a few odd ones with the task's own tolerance, and also that a
slightly wrong answer would fail the same check, so the comparison is not vacuous.
On a GPU (marked gpu) the same checks run at the benchmark shapes.
"""
from __future__ import annotations

import ast
import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
EXTRA_SHAPES = {
    "matmul_bias_relu": [{"M": 7, "K": 5, "N": 13}, {"M": 33, "K": 70, "N": 1000},
                         {"M": 129, "K": 65, "N": 257}],
    "transformer_block": [{"B": 3, "T": 70, "D": 128, "F": 131}],
}


def _load_example(name):
    path = ROOT / "examples" / f"{name}.py"
    spec = importlib.util.spec_from_file_location(f"example_{name}", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _check_all(name, device, shapes):
    """[(shape, passed, worst, perturbed_fails)] for the example `name` on `device`."""
    import torch

    sys.path.insert(0, str(ROOT))
    from evaluator.tasks import get_task

    task = get_task(name)
    example = _load_example(name)
    results = []
    for i, shape in enumerate(shapes):
        # the first of a few seeds whose answer is not all zero (a 1x1x1 matmul followed by a ReLU
        # is zero for about half of them), so that the 10 % perturbation below moves it
        for attempt in range(8):
            inputs = task.make_inputs(shape, 100 + i + 1000 * attempt, device)
            gold = task.reference_fp32(*inputs)
            if gold.float().abs().max() > 0:
                break
        out = example.custom_kernel(*inputs)
        assert out.dtype == task.output_dtype and out.device.type == device
        assert out.shape == gold.shape
        passed, _, worst = task.tolerance.compare(out, gold)
        # an answer off by 10 % of the output's scale must fail the same comparison
        scale = gold.float().square().mean().sqrt()
        wrong = (out.float() + 0.1 * scale).to(out.dtype)
        perturbed_fails = not task.tolerance.compare(wrong, gold)[0]
        results.append((shape, passed, worst, perturbed_fails))
        del inputs, out, gold
        if device == "cuda":
            torch.cuda.empty_cache()
    return results


def _child(name):
    from evaluator.tasks import get_task

    shapes = list(get_task(name).test_shapes) + EXTRA_SHAPES[name]
    print(json.dumps(_check_all(name, "cpu", shapes)))


def _run_cpu(name):
    env = dict(os.environ, TRITON_INTERPRET="1", OPENBLAS_NUM_THREADS="1", PYTHONPATH=str(ROOT))
    proc = subprocess.run([sys.executable, __file__, name], env=env, capture_output=True,
                          text=True, timeout=300, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("name", ["matmul_bias_relu", "transformer_block"])
def test_example_matches_fp32_gold_in_the_interpreter(name):
    results = _run_cpu(name)
    assert len(results) >= 6
    for shape, passed, worst, perturbed_fails in results:
        assert passed, f"{name} {shape}: worst error {worst:.3f} of the tolerance"
        assert perturbed_fails, f"{name} {shape}: a 10 % offset would pass: check is vacuous"


def test_examples_use_only_triton_for_arithmetic():
    # the examples may allocate and view tensors, never compute with torch (else "not a kernel")
    allowed = {"empty", "bfloat16", "cuda"}
    for name in ("matmul_bias_relu", "transformer_block"):
        tree = ast.parse((ROOT / "examples" / f"{name}.py").read_text())
        for node in ast.walk(tree):
            if isinstance(node, ast.BinOp):
                assert not isinstance(node.op, ast.MatMult), f"{name} uses @"
            if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) \
                    and node.value.id == "torch":
                assert node.attr in allowed, f"{name} uses torch.{node.attr}"
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                names = [a.name for a in node.names] + [getattr(node, "module", None) or ""]
                for bad in ("gc", "ctypes", "inspect", "threading", "torch.nn"):
                    assert not any(n == bad or n.startswith(bad + ".") for n in names), \
                        f"{name} imports {bad}"


def _cuda():
    try:
        import torch
        return torch.cuda.is_available()
    except ImportError:
        return False


@pytest.mark.gpu
@pytest.mark.skipif(not _cuda(), reason="needs a CUDA GPU")
@pytest.mark.parametrize("name", ["matmul_bias_relu", "transformer_block"])
def test_example_matches_fp32_gold_on_the_gpu(name):
    sys.path.insert(0, str(ROOT))
    from evaluator.tasks import get_task

    task = get_task(name)
    shapes = list(task.test_shapes) + EXTRA_SHAPES[name] + list(task.bench_shapes_gpu)
    for shape, passed, worst, perturbed_fails in _check_all(name, "cuda", shapes):
        assert passed, f"{name} {shape}: worst error {worst:.3f} of the tolerance"
        assert perturbed_fails


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT))
    _child(sys.argv[1])
