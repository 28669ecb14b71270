// Seed candidate for gelu (f32): the formula, one element at a time, rows split over threads.
// The chunk each thread takes is a tunable parameter: `kforge optimize` (tune) searches it.
// kforge: param CHUNK = 4096 in {1024, 4096, 16384, 65536}
#include <kforge/kernel.h>

#include <cmath>
#include <cstdint>

KF_EXPORT int kf_forward(const kf_args* a) {
  if (a->num_inputs != 1 || a->num_outputs != 1) return 1;
  const kf_tensor& xt = a->inputs[0];
  const kf_tensor& yt = a->outputs[0];
  if (xt.dtype != KF_F32 || yt.dtype != KF_F32 || xt.ndim != yt.ndim) return 2;
  int64_t n = 1;
  for (int d = 0; d < xt.ndim; ++d) {
    if (xt.shape[d] != yt.shape[d]) return 3;
    n *= xt.shape[d];
  }
  const float* x = static_cast<const float*>(xt.data);
  float* y = static_cast<float*>(yt.data);
#pragma omp parallel for schedule(static, CHUNK)
  for (int64_t i = 0; i < n; ++i) {
    const float v = x[i];
    const float inner = 0.7978845608f * (v + 0.044715f * v * v * v);
    y[i] = 0.5f * v * (1.0f + std::tanh(inner));
  }
  return 0;
}
