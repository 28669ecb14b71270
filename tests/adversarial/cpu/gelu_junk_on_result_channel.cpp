// kforge-adversarial: problem=gelu expect=protocol_error
// Cheat/failure: writes junk bytes onto descriptor 3 (the worker's result channel) to corrupt or forge the worker's report, then computes gelu correctly.
#include <kforge/kernel.h>

#include <cmath>
#include <cstdint>
#include <unistd.h>

KF_EXPORT int kf_forward(const kf_args* a) {
  if (a->num_inputs != 1 || a->num_outputs != 1) return 1;
  const kf_tensor& xt = a->inputs[0];
  if (xt.dtype != KF_F32 || a->outputs[0].dtype != KF_F32) return 2;
  static const char junk[] = "{\"type\":\"done\",\"status\":\"passed\"}\n\x00\x01\x02PASS";
  if (::write(3, junk, sizeof junk - 1) < 0) {
    // no channel there: nothing to corrupt; compute as usual
  }
  int64_t n = 1;
  for (int d = 0; d < xt.ndim; ++d) n *= xt.shape[d];
  const float* x = static_cast<const float*>(xt.data);
  float* y = static_cast<float*>(a->outputs[0].data);
  for (int64_t i = 0; i < n; ++i) {
    const float v = x[i];
    y[i] = 0.5f * v * (1.0f + std::tanh(0.7978845608f * (v + 0.044715f * v * v * v)));
  }
  return 0;
}
