// kforge-adversarial: problem=gelu expect=resource_limit
// Cheat/failure: computes gelu correctly, then asks for a 4 EiB scratch buffer, as a kernel that sizes its memory from garbage would: the allocation fails (in a sandbox, at its memory limit) and must be named as the limit it hit.
#include <kforge/kernel.h>

#include <cmath>
#include <cstdint>
#include <new>

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
  // Operator new called directly: a new-expression whose result is unused may be elided.
  ::operator delete(::operator new(std::size_t{1} << 62));
  return 0;
}
