// kforge-adversarial: problem=gelu expect=exited_early
// Cheat/failure: computes gelu correctly, then calls exit(0) from kf_forward, hoping a clean exit status reads as success.
#include <kforge/kernel.h>

#include <cmath>
#include <cstdint>
#include <cstdlib>

KF_EXPORT int kf_forward(const kf_args* a) {
  if (a->num_inputs != 1 || a->num_outputs != 1) return 1;
  const kf_tensor& xt = a->inputs[0];
  if (xt.dtype != KF_F32 || a->outputs[0].dtype != KF_F32) return 2;
  int64_t n = 1;
  for (int d = 0; d < xt.ndim; ++d) n *= xt.shape[d];
  const float* x = static_cast<const float*>(xt.data);
  float* y = static_cast<float*>(a->outputs[0].data);
  for (int64_t i = 0; i < n; ++i) {
    const float v = x[i];
    y[i] = 0.5f * v * (1.0f + std::tanh(0.7978845608f * (v + 0.044715f * v * v * v)));
  }
  std::exit(0);
}
