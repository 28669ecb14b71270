// kforge-adversarial: problem=layernorm expect=guard
// Cheat/failure: asks for a workspace of one row (cols floats = 4096 bytes) but also stores a sentinel after the row: writes 4100 bytes, past the end of its workspace.
#include <kforge/kernel.h>

#include <cmath>
#include <cstdint>

KF_EXPORT size_t kf_workspace_bytes(const kf_args* a) {
  const kf_tensor& xt = a->inputs[0];
  return static_cast<size_t>(xt.shape[xt.ndim - 1]) * sizeof(float); // forgets the sentinel slot
}

KF_EXPORT int kf_forward(const kf_args* a) {
  if (a->num_inputs != 3 || a->num_outputs != 1) return 1;
  const kf_tensor& xt = a->inputs[0];
  if (xt.dtype != KF_F32 || xt.ndim < 1) return 2;
  const int64_t cols = xt.shape[xt.ndim - 1];
  if (a->workspace == nullptr || a->workspace_bytes < static_cast<size_t>(cols) * sizeof(float)) return 3;
  int64_t rows = 1;
  for (int d = 0; d < xt.ndim - 1; ++d) rows *= xt.shape[d];
  const float* x = static_cast<const float*>(xt.data);
  const float* gamma = static_cast<const float*>(a->inputs[1].data);
  const float* beta = static_cast<const float*>(a->inputs[2].data);
  float* y = static_cast<float*>(a->outputs[0].data);
  float* centered = static_cast<float*>(a->workspace); // x - mean for the current row
  for (int64_t r = 0; r < rows; ++r) {
    const float* xr = x + r * cols;
    float* yr = y + r * cols;
    float sum = 0.0f;
    for (int64_t j = 0; j < cols; ++j) sum += xr[j] - xr[0]; // shifted, like the reference
    const float mean = xr[0] + sum / static_cast<float>(cols);
    float ssq = 0.0f;
    for (int64_t j = 0; j < cols; ++j) {
      centered[j] = xr[j] - mean;
      ssq += centered[j] * centered[j];
    }
    centered[cols] = 0.0f; // the sentinel: one float past the workspace
    const float rstd = 1.0f / std::sqrt(ssq / static_cast<float>(cols) + 1e-5f);
    for (int64_t j = 0; j < cols; ++j) yr[j] = centered[j] * rstd * gamma[j] + beta[j];
  }
  return 0;
}
