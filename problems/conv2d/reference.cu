// Direct convolution, one thread per output element, taps in (c, kh, kw) order,
// accumulated in KF_REAL from the bias. NCHW, square stride and padding.
#include <kforge/kernel.h>
#include <cuda_runtime.h>

namespace {
constexpr int stride = 4, pad = 2;

__global__ void conv2d_direct(const KF_REAL* __restrict__ x, const KF_REAL* __restrict__ w,
                              const KF_REAL* __restrict__ bias, KF_REAL* __restrict__ y, int N, int C, int H, int W,
                              int K, int R, int S, int P, int Q) {
  const long idx = blockIdx.x * (long)blockDim.x + threadIdx.x;
  const long total = (long)N * K * P * Q;
  if (idx >= total) return;
  const int q = idx % Q, p = (idx / Q) % P, k = (idx / ((long)P * Q)) % K, n = idx / ((long)K * P * Q);
  KF_REAL acc = bias[k];
  for (int c = 0; c < C; ++c)
    for (int r = 0; r < R; ++r) {
      const int h = p * stride - pad + r;
      if (h < 0 || h >= H) continue;
      for (int s = 0; s < S; ++s) {
        const int v = q * stride - pad + s;
        if (v < 0 || v >= W) continue;
        acc += x[(((long)n * C + c) * H + h) * W + v] * w[((k * C + c) * R + r) * S + s];
      }
    }
  y[idx] = acc;
}
} // namespace

KF_EXPORT int kf_forward(const kf_args* a) {
  if (a->num_inputs != 3 || a->num_outputs != 1) return 1;
  const kf_tensor &x = a->inputs[0], &w = a->inputs[1], &y = a->outputs[0];
  const int N = x.shape[0], C = x.shape[1], H = x.shape[2], W = x.shape[3];
  const int K = w.shape[0], R = w.shape[2], S = w.shape[3], P = y.shape[2], Q = y.shape[3];
  if (w.shape[1] != C || y.shape[1] != K || P != (H + 2 * pad - R) / stride + 1 || Q != (W + 2 * pad - S) / stride + 1)
    return 1;
  const long total = (long)N * K * P * Q;
  conv2d_direct<<<(total + 255) / 256, 256, 0, static_cast<cudaStream_t>(a->stream)>>>(
      static_cast<const KF_REAL*>(x.data), static_cast<const KF_REAL*>(w.data),
      static_cast<const KF_REAL*>(a->inputs[2].data), static_cast<KF_REAL*>(y.data), N, C, H, W, K, R, S, P, Q);
  return cudaGetLastError() == cudaSuccess ? 0 : 2;
}
