// kforge-adversarial: problem=gelu expect=tolerance
// Cheat/failure: the crude sigmoid approximation x * sigmoid(1.702 x) instead of the problem's tanh formula (max error about 0.02).
#include <kforge/kernel.h>

#include <cmath>
#include <cstdint>

KF_EXPORT int kf_forward(const kf_args* a) {
  if (a->num_inputs != 1 || a->num_outputs != 1) return 1;
  const kf_tensor& xt = a->inputs[0];
  if (xt.dtype != KF_F32 || a->outputs[0].dtype != KF_F32) return 2;
  int64_t n = 1;
  for (int d = 0; d < xt.ndim; ++d) n *= xt.shape[d];
  const float* x = static_cast<const float*>(xt.data);
  float* y = static_cast<float*>(a->outputs[0].data);
  for (int64_t i = 0; i < n; ++i) y[i] = x[i] / (1.0f + std::exp(-1.702f * x[i]));
  return 0;
}
