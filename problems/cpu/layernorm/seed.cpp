// Seed candidate for layernorm (f32): two-pass mean and variance per row, rows split
// over threads.
#include <kforge/kernel.h>

#include <cmath>
#include <cstdint>

KF_EXPORT int kf_forward(const kf_args* a) {
  if (a->num_inputs != 3 || a->num_outputs != 1) return 1;
  const kf_tensor& xt = a->inputs[0];
  const kf_tensor& gt = a->inputs[1];
  const kf_tensor& bt = a->inputs[2];
  const kf_tensor& yt = a->outputs[0];
  if (xt.dtype != KF_F32 || gt.dtype != KF_F32 || bt.dtype != KF_F32 || yt.dtype != KF_F32) return 2;
  if (xt.ndim < 1 || xt.ndim != yt.ndim) return 3;
  int64_t rows = 1;
  for (int d = 0; d < xt.ndim; ++d) {
    if (xt.shape[d] != yt.shape[d]) return 3;
    if (d < xt.ndim - 1) rows *= xt.shape[d];
  }
  const int64_t cols = xt.shape[xt.ndim - 1];
  if (gt.ndim != 1 || gt.shape[0] != cols || bt.ndim != 1 || bt.shape[0] != cols) return 3;

  const float* x = static_cast<const float*>(xt.data);
  const float* gamma = static_cast<const float*>(gt.data);
  const float* beta = static_cast<const float*>(bt.data);
  float* y = static_cast<float*>(yt.data);
#pragma omp parallel for schedule(static)
  for (int64_t r = 0; r < rows; ++r) {
    const float* xr = x + r * cols;
    float* yr = y + r * cols;
    const float shift = xr[0]; // shifted sum: keeps the spread of large-mean rows
    float sum = 0.0f;
    for (int64_t j = 0; j < cols; ++j) sum += xr[j] - shift;
    const float mean = shift + sum / static_cast<float>(cols);
    float ssq = 0.0f;
    for (int64_t j = 0; j < cols; ++j) {
      const float d = xr[j] - mean;
      ssq += d * d;
    }
    const float rstd = 1.0f / std::sqrt(ssq / static_cast<float>(cols) + 1e-5f);
    for (int64_t j = 0; j < cols; ++j) yr[j] = (xr[j] - mean) * rstd * gamma[j] + beta[j];
  }
  return 0;
}
