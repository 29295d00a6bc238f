"""Honest ModelNew: the GEMM x @ W^T in Triton (fp32 tiles) with a fused epilogue adding the
bias, the exact erf GELU and the residual x; same `fc` parameter names, should pass."""
import os

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _gemm_gelu_residual(x_ptr, w_ptr, b_ptr, out_ptr, M, N, K,
                        s_xm, s_wn, s_om,
                        BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    rows = pid_m * BM + tl.arange(0, BM)
    cols = pid_n * BN + tl.arange(0, BN)
    ks = tl.arange(0, BK)
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k0 in range(0, K, BK):
        kk = k0 + ks
        a = tl.load(x_ptr + rows[:, None] * s_xm + kk[None, :],
                    mask=(rows[:, None] < M) & (kk[None, :] < K), other=0.0)
        # W is [N, K]: the tile of W^T is W[cols, kk] transposed
        w = tl.load(w_ptr + cols[None, :] * s_wn + kk[:, None],
                    mask=(cols[None, :] < N) & (kk[:, None] < K), other=0.0)
        acc += tl.dot(a.to(tl.float32), w.to(tl.float32), input_precision="ieee")
    out_mask = (rows[:, None] < M) & (cols[None, :] < N)
    bias = tl.load(b_ptr + cols, mask=cols < N, other=0.0)
    z = acc + bias[None, :]
    g = 0.5 * z * (1.0 + tl.math.erf(z * 0.7071067811865476))
    # in_features == out_features: the residual is x[rows, cols]
    res = tl.load(x_ptr + rows[:, None] * s_xm + cols[None, :], mask=out_mask, other=0.0)
    tl.store(out_ptr + rows[:, None] * s_om + cols[None, :], res + g, mask=out_mask)


class ModelNew(nn.Module):
    def __init__(self, features: int):
        super().__init__()
        self.fc = nn.Linear(features, features)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        w = self.fc.weight.contiguous()
        M, K = x.shape
        N = w.shape[0]
        out = torch.empty((M, N), dtype=x.dtype, device=x.device)
        # the CPU interpreter pays per program and per loop step: big tiles there
        BM, BN, BK = (128, 128, 256) if os.environ.get("TRITON_INTERPRET") == "1" else (64, 64, 32)
        grid = (triton.cdiv(M, BM), triton.cdiv(N, BN))
        _gemm_gelu_residual[grid](x, w, self.fc.bias, out, M, N, K,
                                  x.stride(0), w.stride(0), out.stride(0),
                                  BM=BM, BN=BN, BK=BK)
        return out
