// kforge-adversarial: problem=softmax expect=tolerance
// Cheat/failure: copies the input to the output (finite wherever the input is, but not a softmax).
#include <kforge/kernel.h>

#include <cstdint>
#include <cstring>

KF_EXPORT int kf_forward(const kf_args* a) {
  if (a->num_inputs != 1 || a->num_outputs != 1) return 1;
  const kf_tensor& xt = a->inputs[0];
  if (xt.dtype != KF_F32 || a->outputs[0].dtype != KF_F32) return 2;
  int64_t n = 1;
  for (int d = 0; d < xt.ndim; ++d) n *= xt.shape[d];
  std::memcpy(a->outputs[0].data, xt.data, static_cast<size_t>(n) * sizeof(float));
  return 0;
}
