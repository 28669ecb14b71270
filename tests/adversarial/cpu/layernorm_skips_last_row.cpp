// kforge-adversarial: problem=layernorm expect=unwritten
// Cheat/failure: correct layernorm for every row but the last (loop bound rows - 1), which keeps the poison.
#include <kforge/kernel.h>

#include <cmath>
#include <cstdint>

KF_EXPORT int kf_forward(const kf_args* a) {
  if (a->num_inputs != 3 || a->num_outputs != 1) return 1;
  const kf_tensor& xt = a->inputs[0];
  if (xt.dtype != KF_F32 || xt.ndim < 1) return 2;
  const int64_t cols = xt.shape[xt.ndim - 1];
  int64_t rows = 1;
  for (int d = 0; d < xt.ndim - 1; ++d) rows *= xt.shape[d];
  const float* x = static_cast<const float*>(xt.data);
  const float* gamma = static_cast<const float*>(a->inputs[1].data);
  const float* beta = static_cast<const float*>(a->inputs[2].data);
  float* y = static_cast<float*>(a->outputs[0].data);
  for (int64_t r = 0; r < rows - 1; ++r) {
    const float* xr = x + r * cols;
    float* yr = y + r * cols;
    float sum = 0.0f;
    for (int64_t j = 0; j < cols; ++j) sum += xr[j] - xr[0]; // shifted, like the reference
    const float mean = xr[0] + sum / static_cast<float>(cols);
    float ssq = 0.0f;
    for (int64_t j = 0; j < cols; ++j) ssq += (xr[j] - mean) * (xr[j] - mean);
    const float rstd = 1.0f / std::sqrt(ssq / static_cast<float>(cols) + 1e-5f);
    for (int64_t j = 0; j < cols; ++j) yr[j] = (xr[j] - mean) * rstd * gamma[j] + beta[j];
  }
  return 0;
}
