// Seed: unfused, as a framework runs it: conv into the workspace (filters in shared
// memory), then ReLU + 3x3/2 max pooling in a second kernel.
#include <kforge/kernel.h>
#include <cuda_runtime.h>

namespace {
constexpr int stride = 4, pad = 2, C = 3, R = 11, S = 11, P = 55, Q = 55;

__global__ void conv(const float* __restrict__ x, const float* __restrict__ w, const float* __restrict__ bias,
                     float* __restrict__ y, int H, int W, int K) {
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
        for (int s = 0; s < S; ++s) {
          const int v = q * stride - pad + s;
          if (v >= 0 && v < W) acc = fmaf(x[(((long)n * C + c) * H + h) * W + v], ws[(c * R + r) * S + s], acc);
        }
      }
    y[(((long)n * K + k) * P + p) * Q + q] = acc;
  }
}

__global__ void relu_pool(const float* __restrict__ t, float* __restrict__ y, long total, int PP, int QQ) {
  const long idx = blockIdx.x * (long)blockDim.x + threadIdx.x;
  if (idx >= total) return;
  const int qq = idx % QQ, pp = (idx / QQ) % PP;
  const long plane = idx / ((long)PP * QQ);
  float m = 0.f;
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 3; ++j) m = fmaxf(m, t[(plane * P + pp * 2 + i) * Q + qq * 2 + j]);
  y[idx] = m;
}
} // namespace

KF_EXPORT size_t kf_workspace_bytes(const kf_args* a) {
  return sizeof(float) * a->inputs[0].shape[0] * a->inputs[1].shape[0] * P * Q;
}

KF_EXPORT int kf_forward(const kf_args* a) {
  const kf_tensor &x = a->inputs[0], &w = a->inputs[1], &y = a->outputs[0];
  const int N = x.shape[0], K = w.shape[0], PP = y.shape[2], QQ = y.shape[3];
  auto st = static_cast<cudaStream_t>(a->stream);
  float* t = static_cast<float*>(a->workspace);
  conv<<<dim3(K, N), 256, 0, st>>>(static_cast<const float*>(x.data), static_cast<const float*>(w.data),
                                   static_cast<const float*>(a->inputs[2].data), t, x.shape[2], x.shape[3], K);
  const long total = (long)N * K * PP * QQ;
  relu_pool<<<(total + 255) / 256, 256, 0, st>>>(t, static_cast<float*>(y.data), total, PP, QQ);
  return cudaGetLastError() == cudaSuccess ? 0 : 2;
}
