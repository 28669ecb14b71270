// Seed: classic shared-memory tiling, 32 x 32 tiles, one output per thread, fp32 FMA.
#include <kforge/kernel.h>
#include <cuda_runtime.h>

constexpr int T = 32;

__global__ void matmul_tiled(const float* __restrict__ A, const float* __restrict__ B, float* __restrict__ C, int M,
                             int N, int K) {
  __shared__ float As[T][T], Bs[T][T + 1];
  const int row = blockIdx.y * T + threadIdx.y, col = blockIdx.x * T + threadIdx.x;
  float acc = 0.f;
  for (int k0 = 0; k0 < K; k0 += T) {
    As[threadIdx.y][threadIdx.x] = (row < M && k0 + threadIdx.x < K) ? A[(long)row * K + k0 + threadIdx.x] : 0.f;
    Bs[threadIdx.y][threadIdx.x] = (col < N && k0 + threadIdx.y < K) ? B[(long)(k0 + threadIdx.y) * N + col] : 0.f;
    __syncthreads();
#pragma unroll
    for (int k = 0; k < T; ++k) acc = fmaf(As[threadIdx.y][k], Bs[k][threadIdx.x], acc);
    __syncthreads();
  }
  if (row < M && col < N) C[(long)row * N + col] = acc;
}

KF_EXPORT int kf_forward(const kf_args* a) {
  const int M = a->inputs[0].shape[0], K = a->inputs[0].shape[1], N = a->inputs[1].shape[1];
  matmul_tiled<<<dim3((N + T - 1) / T, (M + T - 1) / T), dim3(T, T), 0, static_cast<cudaStream_t>(a->stream)>>>(
      static_cast<const float*>(a->inputs[0].data), static_cast<const float*>(a->inputs[1].data),
      static_cast<float*>(a->outputs[0].data), M, N, K);
  return cudaGetLastError() == cudaSuccess ? 0 : 2;
}
