"""transformer_block: one pre-norm decoder block forward in bf16, all in Triton.

    n1  = rmsnorm(x) * w_norm1
    h   = x + causal_attention(split_heads(n1 @ w_qkv)) @ w_o
    n2  = rmsnorm(h) * w_norm2
    out = h + (silu(n2 @ w_gate) * (n2 @ w_up)) @ w_down

Seven launches, no torch arithmetic:
  1. rmsnorm rows of x -> n1 (fp32 maths, one bf16 rounding)
  2. GEMM n1 @ w_qkv -> qkv [M, 3D] (q, k, v side by side; attention reads heads by stride)
  3. flash attention, causal, online softmax in fp32, blocks above the diagonal never visited;
     the longest query blocks are launched first -> o [M, D] (heads side by side)
  4. GEMM o @ w_o, epilogue adds the residual x -> h
  5. rmsnorm rows of h -> n2
  6. GEMM n2 @ [w_gate | w_up] with two accumulators sharing the A tile; epilogue
     silu(gate) * up -> g [M, F] (gate and up never reach memory)
  7. GEMM g @ w_down, epilogue adds the residual h -> out
The GEMMs are one persistent kernel (grouped tile order for L2 reuse); on a GPU with 16-byte
aligned rows the tiles move through tensor descriptors (the bulk copy engine), otherwise and in
the CPU interpreter through masked pointer loads, so any B, T, D (multiple of 128), F works.
On a GPU, the first call of each large (B, T, H) times the whole block with each attention tile
of ATTN_CANDIDATES and keeps the fastest for that size (printed to stderr).
"""
import math
import os
import sys
import time

import torch
import triton
import triton.language as tl

try:  # host-side tensor descriptors (triton >= 3.3)
    from triton.tools.tensor_descriptor import TensorDescriptor
except ImportError:  # pragma: no cover
    TensorDescriptor = None

INTERPRET = os.environ.get("TRITON_INTERPRET") == "1"
_INTERP = tl.constexpr(INTERPRET)
HEAD_DIM = 128
EPS = 1e-6
EPI_STORE, EPI_RESIDUAL, EPI_SWIGLU = 0, 1, 2


@triton.jit
def _bf16(x):
    # round fp32 to nearest-even bf16; the CPU interpreter's own cast truncates
    if _INTERP:
        bits = x.to(tl.uint32, bitcast=True)
        bits = (bits + 0x7FFF + ((bits >> 16) & 1)) & 0xFFFF0000
        x = bits.to(tl.float32, bitcast=True)
    return x.to(tl.bfloat16)


# ---------------------------------------------------------------------------------------------
# RMSNorm


@triton.jit
def _rmsnorm_kernel(x, w, y, M, D, s_x, s_y, eps, ROWS: tl.constexpr, BLOCK: tl.constexpr):
    rows = tl.program_id(0) * ROWS + tl.arange(0, ROWS)
    cols = tl.arange(0, BLOCK)
    mask = (rows[:, None] < M) & (cols[None, :] < D)
    v = tl.load(x + rows[:, None] * s_x + cols[None, :], mask=mask, other=0.0).to(tl.float32)
    r = tl.math.rsqrt(tl.sum(v * v, axis=1) / D + eps)
    wv = tl.load(w + cols, mask=cols < D, other=0.0).to(tl.float32)
    out = v * r[:, None] * wv[None, :]
    tl.store(y + rows[:, None] * s_y + cols[None, :], _bf16(out), mask=mask)


def _rmsnorm(x, w, y, cfg=None):
    M, D = x.shape
    block = triton.next_power_of_2(D)
    cfg = cfg or dict(ELEMS=4096, num_warps=4)  # elements (rows x block) per program
    rows = max(1, min(16, cfg["ELEMS"] // block)) if not INTERPRET else 16
    _rmsnorm_kernel[(triton.cdiv(M, rows),)](
        x, w, y, M, D, x.stride(0), y.stride(0), EPS, ROWS=rows, BLOCK=block,
        num_warps=cfg["num_warps"])


# ---------------------------------------------------------------------------------------------
# GEMM with fused epilogues


@triton.jit
def _tile_coords(tile, num_m, num_n, GROUP_M: tl.constexpr):
    per_group = GROUP_M * num_n
    first_m = (tile // per_group) * GROUP_M
    group_rows = min(num_m - first_m, GROUP_M)
    pid_m = first_m + (tile % per_group) % group_rows
    pid_n = (tile % per_group) // group_rows
    return pid_m, pid_n


@triton.jit
def _load_tile(t, r0, c0, R, C, s_r, s_c, BR: tl.constexpr, BC: tl.constexpr,
               USE_TMA: tl.constexpr):
    if USE_TMA:
        return t.load([r0, c0])
    else:
        rr = r0 + tl.arange(0, BR)
        cc = c0 + tl.arange(0, BC)
        return tl.load(t + rr[:, None] * s_r + cc[None, :] * s_c,
                       mask=(rr[:, None] < R) & (cc[None, :] < C), other=0.0)


@triton.jit
def _finish(c, res, acc, r0, c0, M, N, s_cm, s_rm, BM: tl.constexpr, BN: tl.constexpr,
            EPI: tl.constexpr, USE_TMA: tl.constexpr, RES_TMA: tl.constexpr):
    if EPI == 1:
        acc = acc + _load_tile(res, r0, c0, M, N, s_rm, 1, BM, BN, RES_TMA).to(tl.float32)
    out = _bf16(acc)
    if USE_TMA:
        c.store([r0, c0], out)
    else:
        rr = r0 + tl.arange(0, BM)
        cc = c0 + tl.arange(0, BN)
        tl.store(c + rr[:, None] * s_cm + cc[None, :], out,
                 mask=(rr[:, None] < M) & (cc[None, :] < N))


@triton.jit
def _gemm_kernel(
    a, b, b2, c, res,  # tensor descriptors when USE_TMA, else plain pointers
    M, N, K, s_am, s_bk, s_cm, s_rm,
    BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr, GROUP_M: tl.constexpr,
    EPI: tl.constexpr, SPLIT: tl.constexpr,
    USE_TMA: tl.constexpr, RES_TMA: tl.constexpr, UPCAST: tl.constexpr, FLATTEN: tl.constexpr,
):
    num_m = tl.cdiv(M, BM)
    num_n = tl.cdiv(N, BN)
    num_tiles = num_m * num_n
    k_tiles = tl.cdiv(K, BK)
    for tile in tl.range(tl.program_id(0), num_tiles, tl.num_programs(0), flatten=FLATTEN):
        pid_m, pid_n = _tile_coords(tile, num_m, num_n, GROUP_M)
        off_m = pid_m * BM
        off_n = pid_n * BN
        acc = tl.zeros((BM, BN), dtype=tl.float32)
        if EPI == 2:
            acc2 = tl.zeros((BM, BN), dtype=tl.float32)
        for kt in range(k_tiles):
            k0 = kt * BK
            x = _load_tile(a, off_m, k0, M, K, s_am, 1, BM, BK, USE_TMA)
            y = _load_tile(b, k0, off_n, K, N, s_bk, 1, BK, BN, USE_TMA)
            if UPCAST:  # the CPU interpreter's bf16 dot is wrong
                x = x.to(tl.float32)
                y = y.to(tl.float32)
            acc = tl.dot(x, y, acc)
            if EPI == 2:
                y2 = _load_tile(b2, k0, off_n, K, N, s_bk, 1, BK, BN, USE_TMA)
                if UPCAST:
                    y2 = y2.to(tl.float32)
                acc2 = tl.dot(x, y2, acc2)
        if EPI == 2:  # silu(gate) * up, in fp32, one rounding
            acc = acc / (1.0 + tl.exp(-acc)) * acc2
        if SPLIT:  # two half-width stores: smaller epilogue buffer, more room for stages
            halves = tl.split(tl.permute(tl.reshape(acc, (BM, 2, BN // 2)), (0, 2, 1)))
            _finish(c, res, halves[0], off_m, off_n, M, N, s_cm, s_rm, BM, BN // 2, EPI,
                    USE_TMA, RES_TMA)
            _finish(c, res, halves[1], off_m, off_n + BN // 2, M, N, s_cm, s_rm, BM, BN // 2,
                    EPI, USE_TMA, RES_TMA)
        else:
            _finish(c, res, acc, off_m, off_n, M, N, s_cm, s_rm, BM, BN, EPI, USE_TMA, RES_TMA)


_SMS = {}


def _num_sms(device):
    if device.type != "cuda":
        return 4
    idx = device.index if device.index is not None else torch.cuda.current_device()
    if idx not in _SMS:
        _SMS[idx] = torch.cuda.get_device_properties(idx).multi_processor_count
    return _SMS[idx]


def _tma_ok(*tensors):
    if INTERPRET or TensorDescriptor is None:
        return False
    for t in tensors:
        if t is None:
            continue
        if not t.is_cuda or t.stride(-1) != 1 or (t.stride(0) * t.element_size()) % 16 \
                or t.data_ptr() % 16:
            return False
    return True


def _desc(t, block):
    return TensorDescriptor(t, list(t.shape), [t.stride(0), 1], block)


# Tile configs per stage, chosen from per-stage sweeps on one H200 (docs/examples.md). P:
# persistent grid (one program per SM, or two with CTAS_PER_SM=2 when two small CTAs fit an
# SM); non-persistent otherwise. The swiglu BN is per accumulator (gate and up each get BN).
_BIG = dict(BM=128, BN=256, BK=64, GROUP_M=8, num_warps=8, num_stages=3, FLATTEN=False)
_SMALL_2CTA = dict(BM=128, BN=128, BK=64, GROUP_M=8, num_warps=4, num_stages=3, SPLIT=True,
                   FLATTEN=False, PERSISTENT=True, CTAS_PER_SM=2)
GPU_CONFIG = {
    "qkv": dict(_BIG, SPLIT=False, PERSISTENT=True),
    "oproj": dict(_SMALL_2CTA, RES_TMA=True),
    "swiglu": dict(BM=128, BN=128, BK=64, GROUP_M=8, num_warps=8, num_stages=4, SPLIT=True,
                   FLATTEN=False, PERSISTENT=False),
    # with D <= 2048 (short K) two 128x64 dual-accumulator CTAs per SM did better
    "swiglu_short_k": dict(_SMALL_2CTA, BN=64),
    "down": dict(_BIG, SPLIT=True, PERSISTENT=False, RES_TMA=True),
    "attn": "pick",  # ATTN_CANDIDATES, timed at the first call of each size
    "rmsnorm": dict(ELEMS=4096, num_warps=4),
}
# unaligned rows on a GPU (no descriptors): pointer loads need smaller tiles
GPU_FALLBACK = {
    "gemm": dict(BM=128, BN=128, BK=32, GROUP_M=8, num_warps=8, num_stages=3, SPLIT=False,
                 FLATTEN=False, PERSISTENT=False),
    "attn": dict(BM=64, BN=64, num_warps=4, num_stages=2),
}
# In the interpreter every call of a jitted helper costs milliseconds: big tiles, few calls.
_CPU_GEMM = dict(BM=64, BN=128, BK=128, GROUP_M=4, num_warps=4, num_stages=1, SPLIT=False,
                 FLATTEN=False, PERSISTENT=True)
CPU_CONFIG = {
    "qkv": _CPU_GEMM, "oproj": _CPU_GEMM, "down": _CPU_GEMM,
    "swiglu": dict(_CPU_GEMM, SPLIT=True),
    "attn": dict(BM=64, BN=64, num_warps=4, num_stages=1),
    "rmsnorm": dict(ELEMS=4096, num_warps=4),
}


def _gemm(a, b, c, cfg, epi=EPI_STORE, b2=None, res=None):
    M, K = a.shape
    N = b.shape[1]
    tma = _tma_ok(a, b, b2, c, res)
    cfg = dict(GPU_FALLBACK["gemm"] if a.is_cuda and not tma and not INTERPRET else cfg)
    BM, BN, BK = cfg.pop("BM"), cfg.pop("BN"), cfg.pop("BK")
    split = cfg.pop("SPLIT")
    persistent = cfg.pop("PERSISTENT")
    # the residual through a descriptor costs a shared-memory tile; through pointers, none
    res_tma = cfg.pop("RES_TMA", False) and tma
    cn = BN // 2 if split else BN
    if tma:
        a_arg, b_arg, c_arg = _desc(a, [BM, BK]), _desc(b, [BK, BN]), _desc(c, [BM, cn])
        b2_arg = _desc(b2, [BK, BN]) if b2 is not None else b_arg
        res_arg = _desc(res, [BM, cn]) if res_tma and res is not None else res
    else:
        a_arg, b_arg, c_arg = a, b, c
        b2_arg = b2 if b2 is not None else b
        res_arg = res
    if res_arg is None:
        res_arg = c_arg  # unused (EPI != residual); any argument of the right kind
    tiles = triton.cdiv(M, BM) * triton.cdiv(N, BN)
    # persistent: CTAS_PER_SM programs per multiprocessor walk the tiles (2 when two small
    # CTAs fit one SM, so one's epilogue overlaps the other's main loop)
    ctas = cfg.pop("CTAS_PER_SM", 1)
    progs = min(tiles, _num_sms(a.device) * ctas) if persistent else tiles
    _gemm_kernel[(progs,)](
        a_arg, b_arg, b2_arg, c_arg, res_arg, M, N, K,
        a.stride(0), b.stride(0), c.stride(0), res.stride(0) if res is not None else 0,
        BM=BM, BN=BN, BK=BK, EPI=epi, SPLIT=split, USE_TMA=tma,
        RES_TMA=res_tma, UPCAST=INTERPRET, **cfg)


# ---------------------------------------------------------------------------------------------
# Causal flash attention over the packed qkv buffer


@triton.jit
def _attn_block(acc, m_i, l_i, q, kv, row0, k_col, v_col, start_n, offs_m, T, s_t, qk_scale,
                BM: tl.constexpr, BN: tl.constexpr, HD: tl.constexpr,
                DIAG: tl.constexpr, USE_TMA: tl.constexpr, UPCAST: tl.constexpr):
    k = _load_tile(kv, row0 + start_n, k_col, row0 + T, k_col + HD, s_t, 1, BN, HD, USE_TMA)
    if UPCAST:
        k = k.to(tl.float32)
    s = tl.dot(q, tl.trans(k))
    if DIAG:
        offs_n = start_n + tl.arange(0, BN)
        s = tl.where(offs_m[:, None] >= offs_n[None, :], s, float("-inf"))
    # running max kept in scaled units: the scale folds into one multiply-add per score
    m_new = tl.maximum(m_i, tl.max(s, axis=1) * qk_scale)
    p = tl.math.exp2(s * qk_scale - m_new[:, None])
    alpha = tl.math.exp2(m_i - m_new)
    l_i = l_i * alpha + tl.sum(p, axis=1)
    v = _load_tile(kv, row0 + start_n, v_col, row0 + T, v_col + HD, s_t, 1, BN, HD, USE_TMA)
    if UPCAST:
        v = v.to(tl.float32)
        p = _bf16(p).to(tl.float32)
    else:
        p = p.to(tl.bfloat16)
    acc = tl.dot(p, v, acc * alpha[:, None])
    return acc, m_new, l_i


@triton.jit
def _attn_kernel(qd, kvd, o, T, H, D, s_t, s_ot, qk_scale,
                 BM: tl.constexpr, BN: tl.constexpr, HD: tl.constexpr,
                 USE_TMA: tl.constexpr, UPCAST: tl.constexpr):
    bh = tl.program_id(0)
    b = bh // H
    h = bh % H
    # longest rows of the causal triangle first: the tail of the launch is short blocks
    start_m = (tl.num_programs(1) - 1 - tl.program_id(1)) * BM
    row0 = b * T
    q_col = h * HD
    k_col = D + h * HD
    v_col = 2 * D + h * HD
    offs_m = start_m + tl.arange(0, BM)
    q = _load_tile(qd, row0 + start_m, q_col, row0 + T, q_col + HD, s_t, 1, BM, HD, USE_TMA)
    if UPCAST:
        q = q.to(tl.float32)
    m_i = tl.full((BM,), float("-inf"), dtype=tl.float32)
    l_i = tl.zeros((BM,), dtype=tl.float32)
    acc = tl.zeros((BM, HD), dtype=tl.float32)
    # key blocks wholly at or below the diagonal: no mask
    for start_n in range(0, start_m, BN):
        acc, m_i, l_i = _attn_block(acc, m_i, l_i, q, kvd, row0, k_col, v_col, start_n, offs_m,
                                    T, s_t, qk_scale, BM, BN, HD, False, USE_TMA, UPCAST)
    # key blocks crossing the diagonal: causal mask (keys past T only meet padding rows)
    for start_n in range(start_m, tl.minimum(start_m + BM, T), BN):
        acc, m_i, l_i = _attn_block(acc, m_i, l_i, q, kvd, row0, k_col, v_col, start_n, offs_m,
                                    T, s_t, qk_scale, BM, BN, HD, True, USE_TMA, UPCAST)
    out = _bf16(acc / l_i[:, None])
    cols = tl.arange(0, HD)
    tl.store(o + (row0 + offs_m)[:, None] * s_ot + (q_col + cols)[None, :], out,
             mask=offs_m[:, None] < T)


# Attention tiles tried at the first call of each (B, T, H) on a GPU with descriptors: the
# fastest one then serves every later call of that size. The two winners of a sweep of
# nine tiles (docs/bench/tune-examples.md): 128x128 with 8 warps at B4 T2048 (0.201 ms, the next 0.209) and
# 64x64 with 4 warps at B1 T4096 (0.303 ms, the next 0.326).
ATTN_CANDIDATES = (
    dict(BM=64, BN=64, num_warps=4, num_stages=3),
    dict(BM=128, BN=128, num_warps=8, num_stages=3),
)
ATTN_DEFAULT = ATTN_CANDIDATES[0]
# below this many score entries (B * H * T * T) the attention is a few microseconds whatever the
# tile, and timing cannot tell tiles apart: the default serves
ATTN_PICK_MIN_SCORES = 1 << 26
_ATTN_PICK = {}


def _cuda_ms(run):
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    run()
    end.record()
    end.synchronize()
    return start.elapsed_time(end)


def _pick(run, candidates, rounds=5, reps=3, warm_s=0.05, timed=_cuda_ms, sync=torch.cuda.synchronize):
    """The candidate `run(cfg)` finishes fastest, by the median of rounds x reps timings.
    Every candidate runs once first (its compile); the device is then kept busy for warm_s (idle
    clocks ramp up slowly: picks timed straight after each compile read 25-45 % slow); the rounds
    interleave the candidates, so a clock change touches all of them alike.
    Returns (cfg, {label: median ms}), or (None, {}) when none ran."""
    alive = []
    for cand in candidates:
        try:
            run(cand)
            alive.append(cand)
        except Exception:  # e.g. a tile over the shared-memory limit: skip it
            continue
    if not alive:
        return None, {}
    sync()
    warm = time.perf_counter()
    while time.perf_counter() - warm < warm_s:
        run(alive[0])
        sync()
    times = [[] for _ in alive]
    for _ in range(rounds):
        for i, cand in enumerate(alive):
            for _ in range(reps):
                times[i].append(timed(lambda: run(cand)))
    medians = [sorted(t)[len(t) // 2] for t in times]
    best = min(range(len(alive)), key=medians.__getitem__)
    return alive[best], {_label(c): m for c, m in zip(alive, medians)}


def _label(cfg):
    return f"{cfg['BM']}x{cfg['BN']} w{cfg['num_warps']} s{cfg['num_stages']}"


def _wants_pick(x, B, T, H):
    """Tiles are timed only on a GPU with tensor descriptors, and only for large problems."""
    return (x.is_cuda and not INTERPRET and TensorDescriptor is not None
            and B * H * T * T >= ATTN_PICK_MIN_SCORES)


def _pick_block_attention(inputs, B, T, H, **pick_kw):
    """The attention tile for this size, picked by timing the whole block with each candidate:
    the attention then runs where it will be scored (right after the qkv GEMM, with what that
    left in L2). Timing the attention alone gives a pick that disagrees with a flushed
    per-stage sweep by 18 % at B4 T2048. The choice and every candidate's time go to
    stderr, which lands in the evaluation report's logs."""
    key = (B, T, H, inputs[0].device.index)
    if key not in _ATTN_PICK:
        best, ms = _pick(lambda c: transformer_block(*inputs, config={"attn": c}), ATTN_CANDIDATES,
                         **pick_kw)
        _ATTN_PICK[key] = best or ATTN_DEFAULT
        times = ", ".join(f"{k} {v * 1e3:.0f} us" for k, v in ms.items())
        print(f"attention B={B} T={T} H={H}: picked {_label(best)} by whole-block time ({times})"
              if best else "attention: no candidate ran", file=sys.stderr)
    return _ATTN_PICK[key]


def _attention(qkv, o, B, T, H, cfg):
    if cfg == "pick" and not _tma_ok(qkv):
        cfg = GPU_FALLBACK["attn"] if qkv.is_cuda else CPU_CONFIG["attn"]
    if cfg == "pick":  # a size the block has picked for, or the default (tiny sizes, stage timing)
        cfg = _ATTN_PICK.get((B, T, H, qkv.device.index), ATTN_DEFAULT)
    tma = _tma_ok(qkv)
    cfg = dict(GPU_FALLBACK["attn"] if qkv.is_cuda and not tma and not INTERPRET else cfg)
    BM, BN = cfg.pop("BM"), cfg.pop("BN")
    assert BM % BN == 0  # the unmasked loop stops exactly at the diagonal block
    D = H * HEAD_DIM
    # rows of other batches (or zero fill past the end) that a descriptor reads at a
    # sequence's edge are masked or discarded, so 2-D descriptors serve all batches
    q_arg = _desc(qkv, [BM, HEAD_DIM]) if tma else qkv
    kv_arg = _desc(qkv, [BN, HEAD_DIM]) if tma else qkv
    scale = (1.0 / math.sqrt(HEAD_DIM)) * 1.4426950408889634  # softmax in base 2
    _attn_kernel[(B * H, triton.cdiv(T, BM))](
        q_arg, kv_arg, o, T, H, D, qkv.stride(0), o.stride(0), scale,
        BM=BM, BN=BN, HD=HEAD_DIM, USE_TMA=tma, UPCAST=INTERPRET, **cfg)


# ---------------------------------------------------------------------------------------------


def transformer_block(x, w_norm1, w_qkv, w_o, w_norm2, w_gate, w_up, w_down, config=None):
    B, T, D = x.shape
    F = w_gate.shape[1]
    H = D // HEAD_DIM
    M = B * T
    cfg = dict(CPU_CONFIG if INTERPRET or not x.is_cuda else GPU_CONFIG)
    cfg.update(config or {})
    if cfg["attn"] == "pick" and _wants_pick(x, B, T, H):
        cfg["attn"] = _pick_block_attention((x, w_norm1, w_qkv, w_o, w_norm2, w_gate, w_up, w_down),
                                            B, T, H)
    dev = x.device
    bf = torch.bfloat16
    xf = x.reshape(M, D)

    n1 = torch.empty((M, D), device=dev, dtype=bf)
    _rmsnorm(xf, w_norm1, n1, cfg["rmsnorm"])
    qkv = torch.empty((M, 3 * D), device=dev, dtype=bf)
    _gemm(n1, w_qkv, qkv, cfg["qkv"])
    o = torch.empty((M, D), device=dev, dtype=bf)
    _attention(qkv, o, B, T, H, cfg["attn"])
    h = torch.empty((M, D), device=dev, dtype=bf)
    _gemm(o, w_o, h, cfg["oproj"], epi=EPI_RESIDUAL, res=xf)
    n2 = n1  # n1 is dead once qkv exists
    _rmsnorm(h, w_norm2, n2, cfg["rmsnorm"])
    f_pad = (F + 7) // 8 * 8  # 16-byte aligned rows for the descriptors
    g = torch.empty((M, f_pad), device=dev, dtype=bf)[:, :F]
    swiglu = cfg["swiglu_short_k"] if D <= 2048 and "swiglu_short_k" in cfg else cfg["swiglu"]
    _gemm(n2, w_gate, g, swiglu, epi=EPI_SWIGLU, b2=w_up)
    out = torch.empty((M, D), device=dev, dtype=bf)
    _gemm(g, w_down, out, cfg["down"], epi=EPI_RESIDUAL, res=h)
    return out.view(B, T, D)


def custom_kernel(x, w_norm1, w_qkv, w_o, w_norm2, w_gate, w_up, w_down):
    return transformer_block(x, w_norm1, w_qkv, w_o, w_norm2, w_gate, w_up, w_down)
