// bench/tune_rate.sh's candidate: problems/softmax/seed.cu with a second parameter, so that
// `kforge optimize --strategy tune` has a 16-point grid to search (the seed's alone has 4):
// each thread handles UNROLL elements per loop step.
// kforge: param THREADS = 256 in {128, 256, 512, 1024}
// kforge: param UNROLL = 1 in {1, 2, 4, 8}
#include <kforge/kernel.h>
#include <cuda_runtime.h>

namespace {

constexpr int threads = THREADS;

template <bool is_max>
__device__ float block_reduce(float v, float* red) {
  for (int o = 16; o > 0; o >>= 1) {
    const float w = __shfl_xor_sync(0xffffffffu, v, o);
    v = is_max ? fmaxf(v, w) : v + w;
  }
  if (threadIdx.x % 32 == 0) red[threadIdx.x / 32] = v;
  __syncthreads();
  float r = red[0];
  for (int w = 1; w < threads / 32; ++w) r = is_max ? fmaxf(r, red[w]) : r + red[w];
  __syncthreads();
  return r;
}

__global__ void softmax_rows(const float* __restrict__ x, float* __restrict__ y, long cols) {
  __shared__ float red[threads / 32];
  const float* xr = x + blockIdx.x * cols;
  float* yr = y + blockIdx.x * cols;
  constexpr long step = static_cast<long>(threads) * UNROLL;
  float m = -INFINITY;
  for (long j0 = threadIdx.x; j0 < cols; j0 += step)
#pragma unroll
    for (int u = 0; u < UNROLL; ++u)
      if (const long j = j0 + u * threads; j < cols) m = fmaxf(m, xr[j]);
  m = block_reduce<true>(m, red);
  float s = 0.f;
  for (long j0 = threadIdx.x; j0 < cols; j0 += step)
#pragma unroll
    for (int u = 0; u < UNROLL; ++u)
      if (const long j = j0 + u * threads; j < cols) s += expf(xr[j] - m);
  s = block_reduce<false>(s, red);
  for (long j0 = threadIdx.x; j0 < cols; j0 += step)
#pragma unroll
    for (int u = 0; u < UNROLL; ++u)
      if (const long j = j0 + u * threads; j < cols) yr[j] = expf(xr[j] - m) / s;
}

} // namespace

KF_EXPORT int kf_forward(const kf_args* a) {
  if (a->num_inputs != 1 || a->num_outputs != 1 || a->inputs[0].ndim != 2) return 1;
  const long rows = a->inputs[0].shape[0], cols = a->inputs[0].shape[1];
  softmax_rows<<<rows, threads, 0, static_cast<cudaStream_t>(a->stream)>>>(
      static_cast<const float*>(a->inputs[0].data), static_cast<float*>(a->outputs[0].data), cols);
  return cudaGetLastError() == cudaSuccess ? 0 : 2;
}
