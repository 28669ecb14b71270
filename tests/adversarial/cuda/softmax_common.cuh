// The correct softmax the CUDA adversarial kernels build their cheats on: each file
// includes it and departs from it in exactly one way.
#pragma once
#include <kforge/kernel.h>
#include <cuda_runtime.h>
#include <math.h>
__global__ void sm(const float* x, float* y, long cols, bool subtract_max) {
  const float* xr = x + blockIdx.x * cols;
  float* yr = y + blockIdx.x * cols;
  __shared__ float red[32];
  float m = -INFINITY;
  for (long j = threadIdx.x; j < cols; j += blockDim.x) m = fmaxf(m, xr[j]);
  for (int o = 16; o > 0; o >>= 1) m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, o));
  if (threadIdx.x % 32 == 0) red[threadIdx.x / 32] = m;
  __syncthreads();
  m = red[0];
  for (int w = 1; w < blockDim.x / 32; ++w) m = fmaxf(m, red[w]);
  __syncthreads();
  if (!subtract_max) m = 0.f;
  float s = 0.f;
  for (long j = threadIdx.x; j < cols; j += blockDim.x) s += expf(xr[j] - m);
  for (int o = 16; o > 0; o >>= 1) s += __shfl_xor_sync(0xffffffffu, s, o);
  if (threadIdx.x % 32 == 0) red[threadIdx.x / 32] = s;
  __syncthreads();
  s = 0.f;
  for (int w = 0; w < blockDim.x / 32; ++w) s += red[w];
  for (long j = threadIdx.x; j < cols; j += blockDim.x) yr[j] = expf(xr[j] - m) / s;
}
static void run(const kf_args* a, bool subtract_max = true) {
  sm<<<a->inputs[0].shape[0], 256, 0, (cudaStream_t)a->stream>>>((const float*)a->inputs[0].data,
      (float*)a->outputs[0].data, a->inputs[0].shape[1], subtract_max);
}
