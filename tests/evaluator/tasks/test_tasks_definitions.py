"""The task definitions: registry, input generators, tolerances, roofline figures.

The tolerance tests are the ones that matter: each asserts that an honest computation passes with
margin and that a known way of cheating or cutting corners (fp16 for an fp32 task, fp8 for a bf16
task, zeros, skipped rows or work) fails."""

import pytest
import torch
import torch.nn.functional as F

from evaluator.tasks import TASKS, get_task
from evaluator.tasks.folder import reference_module

block = reference_module("transformer_block")
from evaluator.tasks.base import signed_matrix

NAMES = ["gelu_bias_residual", "layernorm", "matmul_bias_relu", "softmax", "transformer_block"]
FP32_TASKS = ["gelu_bias_residual", "layernorm", "softmax"]
BF16_TASKS = ["matmul_bias_relu", "transformer_block"]


def output_numel(shape):
    if "B" in shape:
        return shape["B"] * shape["T"] * shape["D"]
    return shape["M"] * shape["N"]


def big_test_shapes(task, min_numel=100):
    """Test shapes whose output has enough elements for error statistics to mean something."""
    return [s for s in task.test_shapes if output_numel(s) >= min_numel]


def worst(task, out, gold):
    return task.tolerance.compare(out, gold)[2]


# ---- registry ---------------------------------------------------------------------------------

def test_registry_finds_all_five_tasks():
    assert sorted(TASKS) == NAMES
    for name in NAMES:
        assert get_task(name) is TASKS[name]
        assert TASKS[name].name == name


def test_get_task_unknown_lists_known_names():
    with pytest.raises(KeyError) as err:
        get_task("softmaxx")
    for name in NAMES:
        assert name in str(err.value)


@pytest.mark.parametrize("name", NAMES)
def test_task_metadata_is_complete(name):
    task = TASKS[name]
    assert task.title and len(task.description) > 100
    assert "def custom_kernel(" in task.signature
    assert task.bound in ("memory", "compute")
    assert task.max_speedup_vs_compile > 1.0
    assert len(task.test_shapes) >= 5
    assert task.bench_shapes_gpu and task.bench_shapes_cpu
    # some test shape has a dimension that is no multiple of 16 (block sizes are powers of two)
    odd = [s for s in task.test_shapes if any(v % 16 for k, v in s.items() if k != "D")]
    assert odd, "no test shape off the block-size grid"
    inputs = task.make_inputs(task.test_shapes[1], 1, "cpu")
    assert len(inputs) == len(task.input_names)
    out = task.reference(*inputs)
    assert out.dtype == task.output_dtype
    assert task.reference_fp32(*inputs).shape == out.shape


# ---- inputs -----------------------------------------------------------------------------------

@pytest.mark.parametrize("name", NAMES)
def test_make_inputs_is_deterministic_per_seed(name):
    task = TASKS[name]
    shape = task.test_shapes[2]
    first = task.make_inputs(shape, 12345, "cpu")
    again = task.make_inputs(shape, 12345, "cpu")
    other = task.make_inputs(shape, 12346, "cpu")
    assert all(torch.equal(a, b) for a, b in zip(first, again))
    for a, b in zip(first, other):
        assert not torch.equal(a, b)


@pytest.mark.parametrize("name", NAMES)
def test_inputs_are_signed_varied_and_finite(name):
    task = TASKS[name]
    shape = task.test_shapes[2]
    for seed in range(4):
        inputs = task.make_inputs(shape, seed, "cpu")
        for name_, t in zip(task.input_names, inputs):
            t = t.float()
            assert torch.isfinite(t).all(), name_
            assert t.std() > 0, f"{name_} is constant"
        main = inputs[0].float()
        assert (main > 0).any() and (main < 0).any(), "the first input must be signed"
        assert (main < 0).float().mean() > 0.1


def test_rows_have_varied_scales_and_some_have_outliers():
    task = TASKS["softmax"]
    (x,) = task.make_inputs({"M": 512, "N": 1024}, 8, "cpu")  # seed 8: normal rows
    std = x.std(dim=1)
    assert std.max() / std.min() > 20
    peak = (x - x.mean(dim=1, keepdim=True)).abs().amax(dim=1) / std
    assert (peak > 8).float().mean() > 0.02  # heavy-tailed rows exist
    assert (peak < 5).float().mean() > 0.3  # and most rows are not


def test_seed_picks_among_several_distributions():
    kurtosis = []
    g = torch.Generator().manual_seed(0)
    for dist in range(4):
        x = signed_matrix(g, 256, 1024, "cpu", dist)
        z = (x - x.mean()) / x.std()
        kurtosis.append(float((z**4).mean()))
    # uniform 1.8, normal 3, laplace 6, student-t(4) much larger
    assert kurtosis[1] < 2.2 < kurtosis[0] < 3.5 < kurtosis[2] < kurtosis[3]


# ---- tolerance: fp32 tasks --------------------------------------------------------------------

@pytest.mark.parametrize("name", FP32_TASKS)
def test_fp32_reference_passes_with_margin(name):
    task = TASKS[name]
    for seed in range(3):
        for shape in task.test_shapes:
            inputs = task.make_inputs(shape, seed, "cpu")
            gold = task.reference_fp32(*inputs)
            assert gold.dtype == torch.float32
            assert worst(task, task.reference(*inputs), gold) < 0.6, shape


@pytest.mark.parametrize("name", FP32_TASKS)
@pytest.mark.parametrize("low", [torch.float16, torch.bfloat16])
def test_fp32_task_computed_in_half_precision_fails(name, low):
    task = TASKS[name]
    for seed in range(2):
        for shape in big_test_shapes(task):
            inputs = task.make_inputs(shape, seed, "cpu")
            gold = task.reference_fp32(*inputs)
            cheap = task.reference(*(t.to(low) for t in inputs))
            assert worst(task, cheap, gold) > 3, shape


@pytest.mark.parametrize("name", FP32_TASKS)
def test_fp32_task_with_output_rounded_to_fp16_fails(name):
    task = TASKS[name]
    for shape in big_test_shapes(task):
        inputs = task.make_inputs(shape, 3, "cpu")
        gold = task.reference_fp32(*inputs)
        assert worst(task, gold.half(), gold) > 2, shape


def _softmax_exp2_blocked(x):
    # what a looping Triton kernel does: exp through exp2, sums accumulated block by block
    m = x.max(-1, keepdim=True).values
    e = torch.exp2((x - m) * 1.4426950408889634)
    s = torch.zeros_like(m)
    for j in range(0, x.shape[1], 1024):
        s = s + e[:, j:j + 1024].sum(-1, keepdim=True)
    return e / s


def _layernorm_two_pass(x, w, b):
    n = x.shape[1]
    d = x - x.sum(-1, keepdim=True) / n
    return d * torch.rsqrt((d * d).sum(-1, keepdim=True) / n + 1e-5) * w + b


def test_honest_fp32_variants_pass_and_tanh_gelu_fails():
    shape = {"M": 256, "N": 8192}
    for seed in range(3):
        x, = TASKS["softmax"].make_inputs(shape, seed, "cpu")
        assert worst(TASKS["softmax"], _softmax_exp2_blocked(x), TASKS["softmax"].reference_fp32(x)) < 0.2
        ln = TASKS["layernorm"].make_inputs(shape, seed, "cpu")
        assert worst(TASKS["layernorm"], _layernorm_two_pass(*ln), TASKS["layernorm"].reference_fp32(*ln)) < 0.5
        x, bias, res = TASKS["gelu_bias_residual"].make_inputs(shape, seed, "cpu")
        tanh = F.gelu(x + bias, approximate="tanh") + res
        assert worst(TASKS["gelu_bias_residual"], tanh, TASKS["gelu_bias_residual"].reference_fp32(x, bias, res)) > 5


# ---- tolerance: bf16 tasks --------------------------------------------------------------------

@pytest.mark.parametrize("name", BF16_TASKS)
def test_bf16_reference_passes_its_gold_on_several_seeds(name):
    task = TASKS[name]
    for seed in (0, 1, 2, 2**62 + 5):
        for shape in task.test_shapes:
            inputs = task.make_inputs(shape, seed, "cpu")
            gold = task.reference_fp32(*inputs)
            assert gold.dtype == torch.float32
            assert worst(task, task.reference(*inputs), gold) < 0.6, (seed, shape)


def _fp8(t):
    scale = t.float().abs().amax().clamp_min(1e-12) / 448
    return ((t.float() / scale).to(torch.float8_e4m3fn).float() * scale).bfloat16()


def test_matmul_split_k_with_bf16_partials_passes():
    # cuBLAS may reduce split-K partial sums in bf16; the eager baseline on a GPU must still pass
    task = TASKS["matmul_bias_relu"]
    for seed in range(3):
        for shape in big_test_shapes(task):
            a, b, bias = task.make_inputs(shape, seed, "cpu")
            k = a.shape[1]
            acc = None
            for i in range(4):
                part = slice(i * k // 4, (i + 1) * k // 4)
                p = (a[:, part].float() @ b[part].float()).bfloat16()
                acc = p if acc is None else acc + p
            assert worst(task, torch.relu(acc + bias), task.reference_fp32(a, b, bias)) < 0.9


def test_matmul_in_fp8_or_with_skipped_work_fails():
    task = TASKS["matmul_bias_relu"]
    for seed in range(3):
        for shape in big_test_shapes(task, min_numel=1000):
            a, b, bias = task.make_inputs(shape, seed, "cpu")
            gold = task.reference_fp32(a, b, bias)
            fp8 = torch.relu(_fp8(a).float() @ _fp8(b).float() + bias.float()).bfloat16()
            assert worst(task, fp8, gold) > 1.5, shape
            half_k = a.shape[1] // 2
            skipped = torch.relu(2 * (a[:, :half_k].float() @ b[:half_k].float()) + bias.float())
            assert worst(task, skipped.bfloat16(), gold) > 10, shape
            assert worst(task, (a.float() @ b.float() + bias.float()).bfloat16(), gold) > 10  # no relu


def _block_without_mlp(x, n1, qkv, o, n2, g, u, d):
    return block._block(x, n1, qkv, o, n2, g, u, torch.zeros_like(d))


def _block_without_attention(x, n1, qkv, o, n2, g, u, d):
    return block._block(x, n1, qkv, torch.zeros_like(o), n2, g, u, d)


def _block_not_causal(x, n1, qkv, o, n2, g, u, d):
    b, t, dim = x.shape
    heads = dim // block.HEAD_DIM
    q, k, v = (F.rms_norm(x, (dim,), n1, block.EPS) @ qkv).view(b, t, 3, heads, block.HEAD_DIM).permute(2, 0, 3, 1, 4)
    h = x + F.scaled_dot_product_attention(q, k, v).transpose(1, 2).reshape(b, t, dim) @ o
    n = F.rms_norm(h, (dim,), n2, block.EPS)
    return h + (F.silu(n @ g) * (n @ u)) @ d


def test_transformer_block_with_fp8_weights_or_skipped_work_fails():
    task = TASKS["transformer_block"]
    for seed in range(2):
        for shape in task.test_shapes:
            if shape["T"] < 5:
                continue
            inputs = task.make_inputs(shape, seed, "cpu")
            gold = task.reference_fp32(*inputs)
            x, n1, qkv, o, n2, g, u, d = inputs
            fp8 = block._block(x, n1, _fp8(qkv), _fp8(o), n2, _fp8(g), _fp8(u), _fp8(d))
            assert worst(task, fp8, gold) > 1.5, shape
            assert worst(task, _block_without_mlp(*inputs), gold) > 10, shape
            assert worst(task, _block_without_attention(*inputs), gold) > 10, shape
            assert worst(task, _block_not_causal(*inputs), gold) > 10, shape


def test_transformer_block_branches_are_as_large_as_the_residual():
    # so that skipping or approximating a branch shows in the output
    task = TASKS["transformer_block"]
    inputs = task.make_inputs({"B": 1, "T": 64, "D": 256, "F": 512}, 3, "cpu")
    gold = task.reference_fp32(*inputs)
    x = inputs[0].float()
    rms = lambda t: float(t.float().square().mean().sqrt())  # noqa: E731
    mlp = gold - _block_without_mlp(*(t.float() for t in inputs))
    attn = gold - _block_without_attention(*(t.float() for t in inputs))
    assert 0.3 < rms(mlp) / rms(x) < 3
    assert 0.3 < rms(attn) / rms(x) < 3


# ---- tolerance: every task --------------------------------------------------------------------

@pytest.mark.parametrize("name", NAMES)
def test_zeros_and_partial_rows_fail(name):
    task = TASKS[name]
    for shape in big_test_shapes(task):
        inputs = task.make_inputs(shape, 11, "cpu")
        gold = task.reference_fp32(*inputs)
        out = gold.to(task.output_dtype)
        assert task.tolerance.compare(out, gold)[0]
        assert not task.tolerance.compare(torch.zeros_like(out), gold)[0]
        assert not task.tolerance.compare(torch.full_like(out, float(gold.mean())), gold)[0]
        rows = out.reshape(-1, out.shape[-1])
        if rows.shape[0] < 2:
            continue
        every_64th = torch.zeros_like(rows)
        every_64th[::64] = rows[::64]
        assert not task.tolerance.compare(every_64th.view_as(out), gold)[0], shape
        one_bad_row = rows.clone()
        one_bad_row[min(63, rows.shape[0] - 1)] = rows[0]
        assert not task.tolerance.compare(one_bad_row.view_as(out), gold)[0], shape


def test_nonfinite_output_fails():
    task = TASKS["softmax"]
    (x,) = task.make_inputs({"M": 7, "N": 131}, 0, "cpu")
    gold = task.reference_fp32(x)
    out = gold.clone()
    out[3, 5] = float("nan")
    assert not task.tolerance.compare(out, gold)[0]


# ---- roofline ---------------------------------------------------------------------------------

BANDWIDTH = 4.27e12
PEAK = 790e12
# floors with the H200 ceilings the site publishes (leaderboard/scoring.py, docs/tasks.md)
ANCHOR_FLOORS_MS = [
    ("softmax", {"M": 8192, "N": 8192}, 0.126),
    ("layernorm", {"M": 8192, "N": 8192}, 0.126),
    ("gelu_bias_residual", {"M": 8192, "N": 8192}, 0.188),
    ("matmul_bias_relu", {"M": 4096, "K": 4096, "N": 4096}, 0.174),
    ("transformer_block", {"B": 4, "T": 2048, "D": 2048, "F": 5632}, 1.153),
    ("transformer_block", {"B": 1, "T": 4096, "D": 4096, "F": 11008}, 2.273),
]


@pytest.mark.parametrize("name,shape,floor_ms", ANCHOR_FLOORS_MS)
def test_floor_matches_the_anchor_measurements(name, shape, floor_ms):
    task = TASKS[name]
    assert shape in list(task.bench_shapes_gpu)
    got = task.floor_ms(shape, bandwidth_bytes_s=BANDWIDTH, peak_flop_s=PEAK)
    assert got == pytest.approx(floor_ms, rel=0.01)


@pytest.mark.parametrize("name", NAMES)
def test_flops_and_bytes_positive_and_bound_is_right(name):
    task = TASKS[name]
    for shape in list(task.test_shapes) + list(task.bench_shapes_gpu) + list(task.bench_shapes_cpu):
        assert task.flops(shape) > 0 and task.bytes_moved(shape) > 0
    shape = task.bench_shapes_gpu[0]
    memory_s = task.bytes_moved(shape) / BANDWIDTH
    compute_s = task.flops(shape) / PEAK
    assert (memory_s > compute_s) == (task.bound == "memory")


def test_bytes_moved_counts_inputs_and_output_once():
    assert TASKS["softmax"].bytes_moved({"M": 3, "N": 5}) == 2 * 15 * 4
    assert TASKS["layernorm"].bytes_moved({"M": 3, "N": 5}) == (2 * 15 + 2 * 5) * 4
    assert TASKS["gelu_bias_residual"].bytes_moved({"M": 3, "N": 5}) == (3 * 15 + 5) * 4
    assert TASKS["matmul_bias_relu"].bytes_moved({"M": 2, "K": 3, "N": 5}) == 2 * (6 + 15 + 5 + 10)
