// Computes the right softmax for the first calls (the verification calls), then returns
// at once: a phase-detecting cheat. Caught twice: the re-verified timed calls answer wrong
// (timed_output) and the median comes out far under bytes / bandwidth (impossible_time).
#include <kforge/kernel.h>
#include <cuda_runtime.h>
#include <math.h>

__global__ void sm(const float* x, float* y, long cols) {
  const float* xr = x + blockIdx.x * cols;
  float* yr = y + blockIdx.x * cols;
  __shared__ float red[8];
  float m = -INFINITY;
  for (long j = threadIdx.x; j < cols; j += blockDim.x) m = fmaxf(m, xr[j]);
  for (int o = 16; o > 0; o >>= 1) m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, o));
  if (threadIdx.x % 32 == 0) red[threadIdx.x / 32] = m;
  __syncthreads();
  m = red[0];
  for (int w = 1; w < 8; ++w) m = fmaxf(m, red[w]);
  __syncthreads();
  float s = 0.f;
  for (long j = threadIdx.x; j < cols; j += blockDim.x) s += expf(xr[j] - m);
  for (int o = 16; o > 0; o >>= 1) s += __shfl_xor_sync(0xffffffffu, s, o);
  if (threadIdx.x % 32 == 0) red[threadIdx.x / 32] = s;
  __syncthreads();
  s = 0.f;
  for (int w = 0; w < 8; ++w) s += red[w];
  for (long j = threadIdx.x; j < cols; j += blockDim.x) yr[j] = expf(xr[j] - m) / s;
}

KF_EXPORT int kf_forward(const kf_args* a) {
  static int calls = 0;
  // Past the verification calls (softmax_medium: 2 cases + the hidden one, x 2 calls); in the
  // timing worker that leaves 2 warm-ups and 4 real samples, so most samples are empty.
  if (++calls > 6) return 0;
  sm<<<a->inputs[0].shape[0], 256, 0, (cudaStream_t)a->stream>>>((const float*)a->inputs[0].data,
                                                                 (float*)a->outputs[0].data, a->inputs[0].shape[1]);
  return 0;
}
