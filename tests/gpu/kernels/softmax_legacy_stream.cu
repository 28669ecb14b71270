// A correct softmax launched the way most published load_inline kernels are: a bare
// <<<grid, block>>>, on the legacy default stream, after a 2 ms wait on the GPU. kforge's
// args->stream is a blocking stream, so CUDA orders this kernel inside the call's events:
// it passes (the answer is read after it) and its time includes the wait.
// Self-contained: the confined compiler reads nothing beside the candidate (an #include of
// ../../adversarial/cuda/softmax_common.cuh was refused on the H100, as it should be).
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
__global__ void wait_ns(unsigned long long ns) {
  unsigned long long t0, t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t0));
  do asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t)); while (t - t0 < ns);
}
KF_EXPORT int kf_forward(const kf_args* a) {
  wait_ns<<<1, 1>>>(2000000ull);
  sm<<<a->inputs[0].shape[0], 256>>>((const float*)a->inputs[0].data, (float*)a->outputs[0].data,
                                     a->inputs[0].shape[1], true);
  return 0;
}
