// Softmax over the last dimension; every leading dimension is a row:
//   y[r, j] = exp(x[r, j] - m) / sum_k exp(x[r, k] - m),   m = max_k x[r, k]
// Written over KF_REAL: built with float (the reference) and double (the oracle).
// Single-threaded plain loops, every operation in KF_REAL. Subtracting the row max
// keeps every exp in (0, 1], so nothing overflows and the sum is at least 1.
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

} // namespace

KF_EXPORT int kf_forward(const kf_args* a) {
  if (a->num_inputs != 1 || a->num_outputs != 1) return 1;
  const kf_tensor& xt = a->inputs[0];
  const kf_tensor& yt = a->outputs[0];
  if (xt.dtype != real_dtype || yt.dtype != real_dtype) return 2;
  if (xt.ndim < 1 || xt.ndim > 8 || !same_shape(xt, yt)) return 3;
  if (!contiguous(xt) || !contiguous(yt)) return 4;

  const int64_t cols = xt.shape[xt.ndim - 1];
  int64_t rows = 1;
  for (int d = 0; d < xt.ndim - 1; ++d) rows *= xt.shape[d];

  const KF_REAL* x = static_cast<const KF_REAL*>(xt.data);
  KF_REAL* y = static_cast<KF_REAL*>(yt.data);
  for (int64_t r = 0; r < rows; ++r) {
    const KF_REAL* xr = x + r * cols;
    KF_REAL* yr = y + r * cols;
    KF_REAL m = xr[0];
    for (int64_t j = 1; j < cols; ++j)
      if (xr[j] > m) m = xr[j];
    KF_REAL sum = 0;
    for (int64_t j = 0; j < cols; ++j) {
      const KF_REAL e = std::exp(xr[j] - m);
      yr[j] = e;
      sum += e;
    }
    for (int64_t j = 0; j < cols; ++j) yr[j] = yr[j] / sum;
  }
  return 0;
}
