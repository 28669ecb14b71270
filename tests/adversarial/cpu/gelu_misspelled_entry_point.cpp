// kforge-adversarial: problem=gelu expect=load_failed
// Cheat/failure: a correct gelu that exports kf_foward (misspelled), so the shared object builds but has no kf_forward.
#include <kforge/kernel.h>

#include <cmath>
#include <cstdint>

KF_EXPORT int kf_foward(const kf_args* a) {
  const kf_tensor& xt = a->inputs[0];
  const kf_tensor& yt = a->outputs[0];
  if (a->num_inputs != 1 || a->num_outputs != 1 || xt.dtype != KF_F32 || yt.dtype != KF_F32) return 1;
  int64_t n = 1;
  for (int d = 0; d < xt.ndim; ++d) n *= xt.shape[d];
  const float* x = static_cast<const float*>(xt.data);
  float* y = static_cast<float*>(yt.data);
  for (int64_t i = 0; i < n; ++i) {
    const float v = x[i];
    y[i] = 0.5f * v * (1.0f + std::tanh(0.7978845608f * (v + 0.044715f * v * v * v)));
  }
  return 0;
}
