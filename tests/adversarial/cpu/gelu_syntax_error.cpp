// kforge-adversarial: problem=gelu expect=build_failed
// Cheat/failure: does not compile (a missing semicolon and an undeclared name); the verifier must report the compiler error.
#include <kforge/kernel.h>

#include <cmath>
#include <cstdint>

KF_EXPORT int kf_forward(const kf_args* a) {
  const float* x = static_cast<const float*>(a->inputs[0].data);
  float* y = static_cast<float*>(a->outputs[0].data);
  const int64_t n = a->inputs[0].shape[0] * a->inputs[0].shape[1]
  for (int64_t i = 0; i < n; ++i) y[i] = 0.5f * x[i] * (1.0f + std::tanh(inner_of(x[i])));
  return 0;
}
