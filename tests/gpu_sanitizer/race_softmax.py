# Planted bug: a CUDA softmax (one block per row) that publishes each thread's partial maximum in
# shared memory and reads a neighbour's slot without a barrier in between. The value read only
# decides a branch that never changes the result, so the answer is right and only
# compute-sanitizer's racecheck can catch the race.
import torch
from torch.utils.cpp_extension import load_inline

CUDA = r"""
#include <torch/extension.h>

__global__ void softmax_rows(const float* x, float* out, int n_cols, int* sink) {
    __shared__ float part[256];
    __shared__ float red[256];
    const float* row = x + (long)blockIdx.x * n_cols;
    float* o = out + (long)blockIdx.x * n_cols;
    float m = -INFINITY;
    for (int j = threadIdx.x; j < n_cols; j += blockDim.x) m = fmaxf(m, row[j]);
    part[threadIdx.x] = m;
    float neighbour = part[(threadIdx.x + 1) % blockDim.x];  // RACE: no __syncthreads() before
    if (neighbour == 1234.5f) atomicAdd(sink, 1);            // never changes the output
    red[threadIdx.x] = m;
    __syncthreads();
    for (int s = blockDim.x / 2; s > 0; s >>= 1) {
        if (threadIdx.x < s) red[threadIdx.x] = fmaxf(red[threadIdx.x], red[threadIdx.x + s]);
        __syncthreads();
    }
    float mx = red[0];
    __syncthreads();
    float sum = 0.f;
    for (int j = threadIdx.x; j < n_cols; j += blockDim.x) sum += expf(row[j] - mx);
    red[threadIdx.x] = sum;
    __syncthreads();
    for (int s = blockDim.x / 2; s > 0; s >>= 1) {
        if (threadIdx.x < s) red[threadIdx.x] += red[threadIdx.x + s];
        __syncthreads();
    }
    float total = red[0];
    for (int j = threadIdx.x; j < n_cols; j += blockDim.x) o[j] = expf(row[j] - mx) / total;
}

torch::Tensor softmax(torch::Tensor x) {
    auto out = torch::empty_like(x);
    auto sink = torch::zeros({1}, x.options().dtype(torch::kInt32));
    softmax_rows<<<x.size(0), 256>>>(x.data_ptr<float>(), out.data_ptr<float>(), x.size(1), sink.data_ptr<int>());
    return out;
}
"""

_mod = load_inline(name="race_softmax", cpp_sources="torch::Tensor softmax(torch::Tensor x);",
                   cuda_sources=CUDA, functions=["softmax"], extra_cuda_cflags=["-O2"])


def custom_kernel(x):
    return _mod.softmax(x.contiguous())
