"""matmul_bias_relu: relu(a @ b + bias), a bf16 [M, K], b bf16 [K, N], bias bf16 [N] -> bf16 [M, N].

One Triton kernel, persistent (one program per multiprocessor walking the output tiles in
grouped order so that neighbouring programs share rows of `a` and columns of `b` in L2),
fp32 accumulation, bias + relu applied to the fp32 accumulator before the single rounding to
bf16. On a GPU, when rows are 16-byte aligned, the operands come in through tensor descriptors
(Hopper's bulk copy engine) and the result goes out the same way; otherwise, and in the CPU
interpreter, through masked pointer loads, so any M, N, K works.
"""
import os

import torch
import triton
import triton.language as tl

try:  # host-side tensor descriptors (triton >= 3.3)
    from triton.tools.tensor_descriptor import TensorDescriptor
except ImportError:  # pragma: no cover
    TensorDescriptor = None

INTERPRET = os.environ.get("TRITON_INTERPRET") == "1"


@triton.jit
def _bf16(x, INTERP: tl.constexpr):
    # round fp32 to nearest-even bf16; the CPU interpreter's own cast truncates
    if INTERP:
        bits = x.to(tl.uint32, bitcast=True)
        bits = (bits + 0x7FFF + ((bits >> 16) & 1)) & 0xFFFF0000
        x = bits.to(tl.float32, bitcast=True)
    return x.to(tl.bfloat16)


@triton.jit
def _tile_coords(tile, num_m, num_n, GROUP_M: tl.constexpr):
    # grouped order: GROUP_M row-blocks sweep all column-blocks together (L2 reuse)
    per_group = GROUP_M * num_n
    first_m = (tile // per_group) * GROUP_M
    group_rows = min(num_m - first_m, GROUP_M)
    pid_m = first_m + (tile % per_group) % group_rows
    pid_n = (tile % per_group) // group_rows
    return pid_m, pid_n


@triton.jit
def _mm_bias_relu_kernel(
    a, b, bias, c,  # tensor descriptors when USE_TMA, else plain pointers
    M, N, K,
    s_am, s_ak, s_bk, s_bn, s_cm, s_cn,
    BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr, GROUP_M: tl.constexpr,
    USE_TMA: tl.constexpr, UPCAST: tl.constexpr,
    FLATTEN: tl.constexpr, SPLIT: tl.constexpr,
):
    num_m = tl.cdiv(M, BM)
    num_n = tl.cdiv(N, BN)
    k_tiles = tl.cdiv(K, BK)
    num_tiles = num_m * num_n
    rk = tl.arange(0, BK)
    for tile in tl.range(tl.program_id(0), num_tiles, tl.num_programs(0), flatten=FLATTEN):
        pid_m, pid_n = _tile_coords(tile, num_m, num_n, GROUP_M)
        off_m = pid_m * BM
        off_n = pid_n * BN
        rm = off_m + tl.arange(0, BM)
        rn = off_n + tl.arange(0, BN)
        acc = tl.zeros((BM, BN), dtype=tl.float32)
        for kt in range(k_tiles):
            k0 = kt * BK
            if USE_TMA:
                x = a.load([off_m, k0])
                y = b.load([k0, off_n])
            else:
                x = tl.load(a + rm[:, None] * s_am + (k0 + rk)[None, :] * s_ak,
                            mask=(rm[:, None] < M) & ((k0 + rk)[None, :] < K), other=0.0)
                y = tl.load(b + (k0 + rk)[:, None] * s_bk + rn[None, :] * s_bn,
                            mask=((k0 + rk)[:, None] < K) & (rn[None, :] < N), other=0.0)
            if UPCAST:  # the CPU interpreter's bf16 dot is wrong; fp32 tiles give the exact answer
                x = x.to(tl.float32)
                y = y.to(tl.float32)
            acc = tl.dot(x, y, acc)
        bvec = tl.load(bias + rn, mask=rn < N, other=0.0).to(tl.float32)
        out = _bf16(tl.maximum(acc + bvec[None, :], 0.0), UPCAST)
        if USE_TMA:
            if SPLIT:  # two half-width stores: a smaller epilogue buffer leaves room for stages
                halves = tl.split(tl.permute(tl.reshape(out, (BM, 2, BN // 2)), (0, 2, 1)))
                c.store([off_m, off_n], halves[0])
                c.store([off_m, off_n + BN // 2], halves[1])
            else:
                c.store([off_m, off_n], out)
        else:
            tl.store(c + rm[:, None] * s_cm + rn[None, :] * s_cn, out,
                     mask=(rm[:, None] < M) & (rn[None, :] < N))


# Tile choices measured on one H200 (docs/examples.md); keys are the knobs of the kernel.
GPU_CONFIG = dict(BM=128, BN=256, BK=64, GROUP_M=8, num_warps=8, num_stages=3,
                  FLATTEN=False, SPLIT=False, PERSISTENT=True)
# unaligned rows on a GPU: pointer loads, smaller tiles (register pressure without descriptors)
GPU_FALLBACK = dict(BM=128, BN=128, BK=32, GROUP_M=8, num_warps=8, num_stages=3,
                    FLATTEN=False, SPLIT=False, PERSISTENT=False)
# in the interpreter each tile step costs Python overhead: big tiles, few steps
CPU_CONFIG = dict(BM=64, BN=128, BK=128, GROUP_M=4, num_warps=4, num_stages=1,
                  FLATTEN=False, SPLIT=False, PERSISTENT=True)
_SMS = {}


def _num_sms(device):
    if device.type != "cuda":
        return 8
    idx = device.index if device.index is not None else torch.cuda.current_device()
    if idx not in _SMS:
        _SMS[idx] = torch.cuda.get_device_properties(idx).multi_processor_count
    return _SMS[idx]


def _tma_ok(*tensors):
    if INTERPRET or TensorDescriptor is None:
        return False
    for t in tensors:
        if not t.is_cuda or t.stride(-1) != 1 or (t.stride(0) * t.element_size()) % 16 \
                or t.data_ptr() % 16:
            return False
    return True


def matmul_bias_relu(a, b, bias, config=None, use_tma=None):
    M, K = a.shape
    N = b.shape[1]
    c = torch.empty((M, N), device=a.device, dtype=torch.bfloat16)
    if M == 0 or N == 0:
        return c
    tma = _tma_ok(a, b, c) if use_tma is None else use_tma
    if config is None:
        config = CPU_CONFIG if INTERPRET or not a.is_cuda else \
            GPU_CONFIG if tma else GPU_FALLBACK
    cfg = dict(config)
    BM, BN, BK = cfg.pop("BM"), cfg.pop("BN"), cfg.pop("BK")
    persistent = cfg.pop("PERSISTENT")
    if tma:
        a_arg = TensorDescriptor(a, [M, K], [a.stride(0), 1], [BM, BK])
        b_arg = TensorDescriptor(b, [K, N], [b.stride(0), 1], [BK, BN])
        c_arg = TensorDescriptor(c, [M, N], [N, 1], [BM, BN // 2 if cfg["SPLIT"] else BN])
    else:
        a_arg, b_arg, c_arg = a, b, c
    tiles = triton.cdiv(M, BM) * triton.cdiv(N, BN)
    # persistent: CTAS_PER_SM programs per multiprocessor walk the tiles (2 when two small
    # CTAs fit one SM, so one's epilogue overlaps the other's main loop)
    ctas = cfg.pop("CTAS_PER_SM", 1)
    progs = min(tiles, _num_sms(a.device) * ctas) if persistent else tiles
    _mm_bias_relu_kernel[(progs,)](
        a_arg, b_arg, bias, c_arg, M, N, K,
        a.stride(0), a.stride(1), b.stride(0), b.stride(1), c.stride(0), c.stride(1),
        BM=BM, BN=BN, BK=BK, USE_TMA=tma, UPCAST=INTERPRET, **cfg)
    return c


def custom_kernel(a, b, bias):
    return matmul_bias_relu(a, b, bias)
