// kforge-adversarial: problem=gelu expect=inputs_modified
// Cheat/failure: writes the correct gelu output, then "frees" the input by zeroing it in place (the input is const by contract).
#include <kforge/kernel.h>

#include <cmath>
#include <cstdint>
#include <cstring>

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
  std::memset(xt.data, 0, static_cast<size_t>(n) * sizeof(float));
  return 0;
}
