// Conv (11x11, stride 4, pad 2, bias) -> ReLU -> max over 3x3 windows with stride 2,
// one thread per pooled output, recomputing its nine conv outputs in KF_REAL.
#include <kforge/kernel.h>
#include <cuda_runtime.h>

namespace {
constexpr int stride = 4, pad = 2, pool = 3, pool_stride = 2;

__device__ KF_REAL conv_at(const KF_REAL* x, const KF_REAL* w, KF_REAL b, int n, int k, int p, int q, int C, int H,
                           int W, int R, int S) {
  KF_REAL acc = b;
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
  return acc;
}

__global__ void conv_relu_pool(const KF_REAL* __restrict__ x, const KF_REAL* __restrict__ w,
                               const KF_REAL* __restrict__ bias, KF_REAL* __restrict__ y, int N, int C, int H, int W,
                               int K, int R, int S, int PP, int QQ) {
  const long idx = blockIdx.x * (long)blockDim.x + threadIdx.x;
  if (idx >= (long)N * K * PP * QQ) return;
  const int qq = idx % QQ, pp = (idx / QQ) % PP, k = (idx / ((long)PP * QQ)) % K, n = idx / ((long)K * PP * QQ);
  KF_REAL m = 0; // ReLU then max: the max of max(0, conv) over the window
  for (int i = 0; i < pool; ++i)
    for (int j = 0; j < pool; ++j) {
      const KF_REAL v = conv_at(x, w, bias[k], n, k, pp * pool_stride + i, qq * pool_stride + j, C, H, W, R, S);
      m = v > m ? v : m;
    }
  y[idx] = m;
}
} // namespace

KF_EXPORT int kf_forward(const kf_args* a) {
  if (a->num_inputs != 3 || a->num_outputs != 1) return 1;
  const kf_tensor &x = a->inputs[0], &w = a->inputs[1], &y = a->outputs[0];
  const int N = x.shape[0], C = x.shape[1], H = x.shape[2], W = x.shape[3];
  const int K = w.shape[0], R = w.shape[2], S = w.shape[3], PP = y.shape[2], QQ = y.shape[3];
  const int P = (H + 2 * pad - R) / stride + 1;
  if (PP != (P - pool) / pool_stride + 1) return 1;
  const long total = (long)N * K * PP * QQ;
  conv_relu_pool<<<(total + 255) / 256, 256, 0, static_cast<cudaStream_t>(a->stream)>>>(
      static_cast<const KF_REAL*>(x.data), static_cast<const KF_REAL*>(w.data),
      static_cast<const KF_REAL*>(a->inputs[2].data), static_cast<KF_REAL*>(y.data), N, C, H, W, K, R, S, PP, QQ);
  return cudaGetLastError() == cudaSuccess ? 0 : 2;
}
