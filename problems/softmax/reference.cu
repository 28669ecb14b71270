// Row softmax, y[r, j] = exp(x[r, j] - max_r) / sum_j exp(x[r, j] - max_r).
// One block per row; three passes over the row (max, sum, write), all arithmetic in
// KF_REAL, so the same source is the fp32 reference and the fp64 oracle.
#include <kforge/kernel.h>
#include <cuda_runtime.h>

namespace {

constexpr int threads = 256;

template <bool is_max>
__device__ KF_REAL block_reduce(KF_REAL v, KF_REAL* scratch) {
  scratch[threadIdx.x] = v;
  __syncthreads();
  for (int s = blockDim.x / 2; s > 0; s >>= 1) {
    if (threadIdx.x < s) {
      const KF_REAL o = scratch[threadIdx.x + s];
      scratch[threadIdx.x] = is_max ? (o > scratch[threadIdx.x] ? o : scratch[threadIdx.x]) : scratch[threadIdx.x] + o;
    }
    __syncthreads();
  }
  const KF_REAL r = scratch[0];
  __syncthreads();
  return r;
}

__global__ void softmax_rows(const KF_REAL* __restrict__ x, KF_REAL* __restrict__ y, long cols) {
  __shared__ KF_REAL scratch[threads];
  const KF_REAL* xr = x + blockIdx.x * cols;
  KF_REAL* yr = y + blockIdx.x * cols;
  KF_REAL m = -INFINITY;
  for (long j = threadIdx.x; j < cols; j += blockDim.x) m = xr[j] > m ? xr[j] : m;
  m = block_reduce<true>(m, scratch);
  KF_REAL s = 0;
  for (long j = threadIdx.x; j < cols; j += blockDim.x) s += exp(xr[j] - m);
  s = block_reduce<false>(s, scratch);
  for (long j = threadIdx.x; j < cols; j += blockDim.x) yr[j] = exp(xr[j] - m) / s;
}

} // namespace

KF_EXPORT int kf_forward(const kf_args* a) {
  if (a->num_inputs != 1 || a->num_outputs != 1 || a->inputs[0].ndim != 2) return 1;
  const long rows = a->inputs[0].shape[0], cols = a->inputs[0].shape[1];
  softmax_rows<<<rows, threads, 0, static_cast<cudaStream_t>(a->stream)>>>(
      static_cast<const KF_REAL*>(a->inputs[0].data), static_cast<KF_REAL*>(a->outputs[0].data), cols);
  return cudaGetLastError() == cudaSuccess ? 0 : 2;
}
