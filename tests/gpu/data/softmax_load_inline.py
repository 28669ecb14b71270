# A load_inline softmax for tests/gpu/problems/softmax_small: one block per row, launched on
# torch's current stream (kforge's args->stream, as the worker sets it).
import torch
from torch.utils.cpp_extension import load_inline

cuda_source = r"""
#include <torch/extension.h>
#include <ATen/cuda/CUDAContext.h>

__global__ void softmax_rows(const float* x, float* y, int cols) {
  const float* xr = x + (size_t)blockIdx.x * cols;
  float* yr = y + (size_t)blockIdx.x * cols;
  __shared__ float red[32];
  float m = -INFINITY;
  for (int j = threadIdx.x; j < cols; j += blockDim.x) m = fmaxf(m, xr[j]);
  for (int o = 16; o; o >>= 1) m = fmaxf(m, __shfl_xor_sync(0xffffffff, m, o));
  if (threadIdx.x % 32 == 0) red[threadIdx.x / 32] = m;
  __syncthreads();
  m = -INFINITY;
  for (int w = 0; w < blockDim.x / 32; ++w) m = fmaxf(m, red[w]);
  __syncthreads();
  float s = 0;
  for (int j = threadIdx.x; j < cols; j += blockDim.x) s += __expf(xr[j] - m);
  for (int o = 16; o; o >>= 1) s += __shfl_xor_sync(0xffffffff, s, o);
  if (threadIdx.x % 32 == 0) red[threadIdx.x / 32] = s;
  __syncthreads();
  s = 0;
  for (int w = 0; w < blockDim.x / 32; ++w) s += red[w];
  for (int j = threadIdx.x; j < cols; j += blockDim.x) yr[j] = __expf(xr[j] - m) / s;
}

torch::Tensor softmax(torch::Tensor x) {
  auto y = torch::empty_like(x);
  softmax_rows<<<x.size(0), 256, 0, at::cuda::getCurrentCUDAStream()>>>(x.data_ptr<float>(), y.data_ptr<float>(), x.size(1));
  return y;
}
"""

ext = load_inline(name="kforge_test_softmax", cpp_sources="torch::Tensor softmax(torch::Tensor x);",
                  cuda_sources=cuda_source, functions=["softmax"], verbose=False)


class ModelNew(torch.nn.Module):
    def forward(self, x):
        return ext.softmax(x)
