// GELU, tanh approximation, elementwise:
//   y = 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))
// Written over KF_REAL: built with float (the reference) and double (the oracle).
// Single-threaded plain loop, every operation in KF_REAL.
#include <kforge/kernel.h>

#include <cmath>
#include <cstdint>

namespace {

constexpr kf_dtype real_dtype = sizeof(KF_REAL) == 8 ? KF_F64 : KF_F32;

bool same_shape(const kf_tensor& a, const kf_tensor& b) {
  if (a.ndim != b.ndim) return false;
  for (int d = 0; d < a.ndim; ++d)
    if (a.shape[d] != b.shape[d]) return false;
  return true;
}

bool contiguous(const kf_tensor& t) {
  int64_t stride = 1;
  for (int d = t.ndim - 1; d >= 0; --d) {
    if (t.strides[d] != stride) return false;
    stride *= t.shape[d];
  }
  return true;
}

int64_t numel(const kf_tensor& t) {
  int64_t n = 1;
  for (int d = 0; d < t.ndim; ++d) n *= t.shape[d];
  return n;
}

} // namespace

KF_EXPORT int kf_forward(const kf_args* a) {
  if (a->num_inputs != 1 || a->num_outputs != 1) return 1;
  const kf_tensor& xt = a->inputs[0];
  const kf_tensor& yt = a->outputs[0];
  if (xt.dtype != real_dtype || yt.dtype != real_dtype) return 2;
  if (xt.ndim < 1 || xt.ndim > 8 || !same_shape(xt, yt)) return 3;
  if (!contiguous(xt) || !contiguous(yt)) return 4;

  const KF_REAL* x = static_cast<const KF_REAL*>(xt.data);
  KF_REAL* y = static_cast<KF_REAL*>(yt.data);
  const int64_t n = numel(xt);

  const KF_REAL half = KF_REAL(0.5);
  const KF_REAL one = KF_REAL(1);
  const KF_REAL k = KF_REAL(0.7978845608028653558798921198687637); // sqrt(2 / pi)
  const KF_REAL c = KF_REAL(0.044715);
  for (int64_t i = 0; i < n; ++i) {
    const KF_REAL v = x[i];
    const KF_REAL inner = k * (v + c * v * v * v);
    y[i] = half * v * (one + std::tanh(inner));
  }
  return 0;
}
