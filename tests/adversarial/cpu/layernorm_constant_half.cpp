// kforge-adversarial: problem=layernorm expect=tolerance
// Cheat/failure: writes the constant 0.5 to every output element.
#include <kforge/kernel.h>

#include <cstdint>

KF_EXPORT int kf_forward(const kf_args* a) {
  if (a->num_inputs != 3 || a->num_outputs != 1) return 1;
  const kf_tensor& yt = a->outputs[0];
  if (yt.dtype != KF_F32) return 2;
  int64_t n = 1;
  for (int d = 0; d < yt.ndim; ++d) n *= yt.shape[d];
  float* y = static_cast<float*>(yt.data);
  for (int64_t i = 0; i < n; ++i) y[i] = 0.5f;
  return 0;
}
