// kforge-adversarial: problem=softmax expect=guard
// Cheat/failure: a correct softmax that walks rows last to first and parks each row's max in the element just before the row as scratch; for row 0 that is y[-1], before the start of the output.
#include <kforge/kernel.h>

#include <cmath>
#include <cstdint>

KF_EXPORT int kf_forward(const kf_args* a) {
  if (a->num_inputs != 1 || a->num_outputs != 1) return 1;
  const kf_tensor& xt = a->inputs[0];
  if (xt.dtype != KF_F32 || a->outputs[0].dtype != KF_F32 || xt.ndim < 1) return 2;
  const int64_t cols = xt.shape[xt.ndim - 1];
  int64_t rows = 1;
  for (int d = 0; d < xt.ndim - 1; ++d) rows *= xt.shape[d];
  const float* x = static_cast<const float*>(xt.data);
  float* y = static_cast<float*>(a->outputs[0].data);
  for (int64_t r = rows - 1; r >= 0; --r) {
    const float* xr = x + r * cols;
    float* yr = y + r * cols;
    // Scratch: the slot before this row belongs to row r - 1, which is written later and overwrites it.
    yr[-1] = xr[0];
    for (int64_t j = 1; j < cols; ++j) yr[-1] = xr[j] > yr[-1] ? xr[j] : yr[-1];
    const float m = yr[-1];
    float sum = 0.0f;
    for (int64_t j = 0; j < cols; ++j) sum += (yr[j] = std::exp(xr[j] - m));
    for (int64_t j = 0; j < cols; ++j) yr[j] /= sum;
  }
  return 0;
}
