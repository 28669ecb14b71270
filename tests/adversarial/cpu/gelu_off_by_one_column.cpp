// kforge-adversarial: problem=gelu expect=tolerance
// Cheat/failure: off-by-one column index: output column j reads input column j + 1 of the same row (clamped to the last column), so every output is shifted by one.
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
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t j = 0; j < cols; ++j) {
      const int64_t src = j + 1 < cols ? j + 1 : cols - 1; // the flaw: should be j
      const float v = x[r * cols + src];
      y[r * cols + j] = 0.5f * v * (1.0f + std::tanh(0.7978845608f * (v + 0.044715f * v * v * v)));
    }
  return 0;
}
