// C[i, j] = sum_k A[i, k] B[k, j]: one thread per output, k in order, accumulated in KF_REAL.
#include <kforge/kernel.h>
#include <cuda_runtime.h>

__global__ void matmul_naive(const KF_REAL* __restrict__ A, const KF_REAL* __restrict__ B, KF_REAL* __restrict__ C,
                             long M, long N, long K) {
  const long i = blockIdx.y * blockDim.y + threadIdx.y, j = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= M || j >= N) return;
  KF_REAL acc = 0;
  for (long k = 0; k < K; ++k) acc += A[i * K + k] * B[k * N + j];
  C[i * N + j] = acc;
}

KF_EXPORT int kf_forward(const kf_args* a) {
  if (a->num_inputs != 2 || a->num_outputs != 1) return 1;
  const long M = a->inputs[0].shape[0], K = a->inputs[0].shape[1], N = a->inputs[1].shape[1];
  if (a->inputs[1].shape[0] != K || a->outputs[0].shape[0] != M || a->outputs[0].shape[1] != N) return 1;
  const dim3 block(32, 8), grid((N + 31) / 32, (M + 7) / 8);
  matmul_naive<<<grid, block, 0, static_cast<cudaStream_t>(a->stream)>>>(
      static_cast<const KF_REAL*>(a->inputs[0].data), static_cast<const KF_REAL*>(a->inputs[1].data),
      static_cast<KF_REAL*>(a->outputs[0].data), M, N, K);
  return cudaGetLastError() == cudaSuccess ? 0 : 2;
}
