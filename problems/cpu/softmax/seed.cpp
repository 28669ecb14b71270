// Seed candidate for softmax (f32): max-subtracted softmax, one row per iteration,
// rows split over threads.
#include <kforge/kernel.h>

#include <cmath>
#include <cstdint>

KF_EXPORT int kf_forward(const kf_args* a) {
  if (a->num_inputs != 1 || a->num_outputs != 1) return 1;
  const kf_tensor& xt = a->inputs[0];
  const kf_tensor& yt = a->outputs[0];
  if (xt.dtype != KF_F32 || yt.dtype != KF_F32 || xt.ndim < 1 || xt.ndim != yt.ndim) return 2;
  int64_t rows = 1;
  for (int d = 0; d < xt.ndim; ++d) {
    if (xt.shape[d] != yt.shape[d]) return 3;
    if (d < xt.ndim - 1) rows *= xt.shape[d];
  }
  const int64_t cols = xt.shape[xt.ndim - 1];
  const float* x = static_cast<const float*>(xt.data);
  float* y = static_cast<float*>(yt.data);
#pragma omp parallel for schedule(static)
  for (int64_t r = 0; r < rows; ++r) {
    const float* xr = x + r * cols;
    float* yr = y + r * cols;
    float m = xr[0];
    for (int64_t j = 1; j < cols; ++j) m = xr[j] > m ? xr[j] : m;
    float sum = 0.0f;
    for (int64_t j = 0; j < cols; ++j) {
      yr[j] = std::exp(xr[j] - m);
      sum += yr[j];
    }
    const float inv = 1.0f / sum;
    for (int64_t j = 0; j < cols; ++j) yr[j] *= inv;
  }
  return 0;
}
