// kforge-adversarial: problem=gelu expect=tolerance
// Cheat/failure: writes every output element (so nothing is "unwritten") but writes 0 everywhere.
#include <kforge/kernel.h>

#include <cstdint>

KF_EXPORT int kf_forward(const kf_args* a) {
  if (a->num_inputs != 1 || a->num_outputs != 1) return 1;
  const kf_tensor& yt = a->outputs[0];
  if (a->inputs[0].dtype != KF_F32 || yt.dtype != KF_F32) return 2;
  int64_t n = 1;
  for (int d = 0; d < yt.ndim; ++d) n *= yt.shape[d];
  float* y = static_cast<float*>(yt.data);
  for (int64_t i = 0; i < n; ++i) y[i] = 0.0f;
  return 0;
}
