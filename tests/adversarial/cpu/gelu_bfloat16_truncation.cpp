// kforge-adversarial: problem=gelu expect=tolerance
// Cheat/failure: precision downgrade: computes gelu correctly, then truncates every output to bfloat16 by masking the low 16 bits (passes allclose at 1e-2, not an honest tolerance).
#include <kforge/kernel.h>

#include <cmath>
#include <cstdint>
#include <cstring>

namespace {
float truncate_to_bf16(float v) {
  uint32_t bits;
  std::memcpy(&bits, &v, sizeof bits);
  bits &= 0xFFFF0000u;
  std::memcpy(&v, &bits, sizeof bits);
  return v;
}
} // namespace

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
    y[i] = truncate_to_bf16(0.5f * v * (1.0f + std::tanh(0.7978845608f * (v + 0.044715f * v * v * v))));
  }
  return 0;
}
