// kforge-adversarial: problem=softmax expect=crashed
// Cheat/failure: keeps each row in a fixed static buffer of 512 floats and std::abort()s (SIGABRT) on longer rows, such as this problem's 1024.
#include <kforge/kernel.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>

namespace {
constexpr int64_t max_cols = 512;
float row_buf[max_cols];
} // namespace

KF_EXPORT int kf_forward(const kf_args* a) {
  if (a->num_inputs != 1 || a->num_outputs != 1) return 1;
  const kf_tensor& xt = a->inputs[0];
  if (xt.dtype != KF_F32 || a->outputs[0].dtype != KF_F32 || xt.ndim < 1) return 2;
  const int64_t cols = xt.shape[xt.ndim - 1];
  if (cols > max_cols) {
    std::fprintf(stderr, "softmax: row of %lld exceeds the static buffer of %lld\n", static_cast<long long>(cols),
                 static_cast<long long>(max_cols));
    std::abort();
  }
  int64_t rows = 1;
  for (int d = 0; d < xt.ndim - 1; ++d) rows *= xt.shape[d];
  const float* x = static_cast<const float*>(xt.data);
  float* y = static_cast<float*>(a->outputs[0].data);
  for (int64_t r = 0; r < rows; ++r) {
    const float* xr = x + r * cols;
    float m = xr[0];
    for (int64_t j = 1; j < cols; ++j) m = xr[j] > m ? xr[j] : m;
    float sum = 0.0f;
    for (int64_t j = 0; j < cols; ++j) sum += (row_buf[j] = std::exp(xr[j] - m));
    for (int64_t j = 0; j < cols; ++j) y[r * cols + j] = row_buf[j] / sum;
  }
  return 0;
}
