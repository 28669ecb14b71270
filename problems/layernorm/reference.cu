// LayerNorm over everything but the first dimension, one block per sample:
//   mean = x0 + sum (x - x0) / n        (shifted: keeps the spread of large-mean samples)
//   var  = sum (x - mean)^2 / n         (two passes, biased)
//   y    = (x - mean) / sqrt(var + eps) * gamma + beta,   eps = 1e-5
// All arithmetic in KF_REAL, so this is the fp32 reference and the fp64 oracle.
#include <kforge/kernel.h>
#include <cuda_runtime.h>

namespace {
constexpr int threads = 1024;

__device__ KF_REAL block_sum(KF_REAL v, KF_REAL* scratch) {
  scratch[threadIdx.x] = v;
  __syncthreads();
  for (int s = threads / 2; s > 0; s >>= 1) {
    if (threadIdx.x < s) scratch[threadIdx.x] += scratch[threadIdx.x + s];
    __syncthreads();
  }
  const KF_REAL r = scratch[0];
  __syncthreads();
  return r;
}

__global__ void layernorm_samples(const KF_REAL* __restrict__ x, const KF_REAL* __restrict__ g,
                                  const KF_REAL* __restrict__ b, KF_REAL* __restrict__ y, long n) {
  __shared__ KF_REAL scratch[threads];
  const KF_REAL* xs = x + blockIdx.x * n;
  KF_REAL* ys = y + blockIdx.x * n;
  const KF_REAL shift = xs[0];
  KF_REAL s = 0;
  for (long i = threadIdx.x; i < n; i += threads) s += xs[i] - shift;
  const KF_REAL mean = shift + block_sum(s, scratch) / KF_REAL(n);
  KF_REAL q = 0;
  for (long i = threadIdx.x; i < n; i += threads) q += (xs[i] - mean) * (xs[i] - mean);
  const KF_REAL rstd = KF_REAL(1) / sqrt(block_sum(q, scratch) / KF_REAL(n) + KF_REAL(1e-5));
  for (long i = threadIdx.x; i < n; i += threads) ys[i] = (xs[i] - mean) * rstd * g[i] + b[i];
}
} // namespace

KF_EXPORT int kf_forward(const kf_args* a) {
  if (a->num_inputs != 3 || a->num_outputs != 1) return 1;
  const long samples = a->inputs[0].shape[0];
  long n = 1;
  for (int d = 1; d < a->inputs[0].ndim; ++d) n *= a->inputs[0].shape[d];
  layernorm_samples<<<samples, threads, 0, static_cast<cudaStream_t>(a->stream)>>>(
      static_cast<const KF_REAL*>(a->inputs[0].data), static_cast<const KF_REAL*>(a->inputs[1].data),
      static_cast<const KF_REAL*>(a->inputs[2].data), static_cast<KF_REAL*>(a->outputs[0].data), n);
  return cudaGetLastError() == cudaSuccess ? 0 : 2;
}
