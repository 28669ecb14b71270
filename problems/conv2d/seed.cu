// Seed: direct convolution with the 96 x 3 x 11 x 11 filter bank of one output channel
// in shared memory; one block per (image, output channel), threads over the 55 x 55 map.
#include <kforge/kernel.h>
#include <cuda_runtime.h>

namespace {
constexpr int stride = 4, pad = 2, C = 3, R = 11, S = 11;

__global__ void conv2d_smem(const float* __restrict__ x, const float* __restrict__ w, const float* __restrict__ bias,
                            float* __restrict__ y, int H, int W, int K, int P, int Q) {
  __shared__ float ws[C * R * S];
  const int n = blockIdx.y, k = blockIdx.x;
  for (int i = threadIdx.x; i < C * R * S; i += blockDim.x) ws[i] = w[k * C * R * S + i];
  __syncthreads();
  for (int o = threadIdx.x; o < P * Q; o += blockDim.x) {
    const int p = o / Q, q = o % Q;
    float acc = bias[k];
    for (int c = 0; c < C; ++c)
      for (int r = 0; r < R; ++r) {
        const int h = p * stride - pad + r;
        if (h < 0 || h >= H) continue;
        const float* xr = x + (((long)n * C + c) * H + h) * W;
        for (int s = 0; s < S; ++s) {
          const int v = q * stride - pad + s;
          if (v >= 0 && v < W) acc = fmaf(xr[v], ws[(c * R + r) * S + s], acc);
        }
      }
    y[(((long)n * K + k) * P + p) * Q + q] = acc;
  }
}
} // namespace

KF_EXPORT int kf_forward(const kf_args* a) {
  const kf_tensor &x = a->inputs[0], &w = a->inputs[1], &y = a->outputs[0];
  if (x.shape[1] != C || w.shape[2] != R || w.shape[3] != S) return 1;
  const int N = x.shape[0], H = x.shape[2], W = x.shape[3], K = w.shape[0], P = y.shape[2], Q = y.shape[3];
  conv2d_smem<<<dim3(K, N), 256, 0, static_cast<cudaStream_t>(a->stream)>>>(
      static_cast<const float*>(x.data), static_cast<const float*>(w.data),
      static_cast<const float*>(a->inputs[2].data), static_cast<float*>(y.data), H, W, K, P, Q);
  return cudaGetLastError() == cudaSuccess ? 0 : 2;
}
