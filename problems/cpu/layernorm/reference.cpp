// LayerNorm over the last dimension; every leading dimension is a row:
//   mean = x[r, 0] + sum_j (x[r, j] - x[r, 0]) / n   (shifted: exact in exact arithmetic)
//   var  = sum_j (x[r, j] - mean)^2 / n          (biased; two passes, never E[x^2] - E[x]^2)
//   y[r, j] = (x[r, j] - mean) / sqrt(var + eps) * gamma[j] + beta[j],   eps = 1e-5
// Inputs: x [..., n], gamma [n], beta [n]; output y like x.
// Written over KF_REAL: built with float (the reference) and double (the oracle).
// Single-threaded plain loops, every operation in KF_REAL.
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
  if (a->num_inputs != 3 || a->num_outputs != 1) return 1;
  const kf_tensor& xt = a->inputs[0];
  const kf_tensor& gt = a->inputs[1];
  const kf_tensor& bt = a->inputs[2];
  const kf_tensor& yt = a->outputs[0];
  const kf_tensor* all[] = {&xt, &gt, &bt, &yt};
  for (const kf_tensor* t : all)
    if (t->dtype != real_dtype) return 2;
  if (xt.ndim < 1 || xt.ndim > 8 || !same_shape(xt, yt)) return 3;
  const int64_t cols = xt.shape[xt.ndim - 1];
  if (gt.ndim != 1 || gt.shape[0] != cols || bt.ndim != 1 || bt.shape[0] != cols) return 3;
  for (const kf_tensor* t : all)
    if (!contiguous(*t)) return 4;

  int64_t rows = 1;
  for (int d = 0; d < xt.ndim - 1; ++d) rows *= xt.shape[d];

  const KF_REAL* x = static_cast<const KF_REAL*>(xt.data);
  const KF_REAL* gamma = static_cast<const KF_REAL*>(gt.data);
  const KF_REAL* beta = static_cast<const KF_REAL*>(bt.data);
  KF_REAL* y = static_cast<KF_REAL*>(yt.data);
  const KF_REAL n = static_cast<KF_REAL>(cols);
  const KF_REAL eps = KF_REAL(1e-5);
  for (int64_t r = 0; r < rows; ++r) {
    const KF_REAL* xr = x + r * cols;
    KF_REAL* yr = y + r * cols;
    // Sum deviations from the row's first element, not raw values: on a large-mean row
    // (x ~ 1000 +- 0.01) a raw float sum loses the spread, and every candidate is judged
    // against this reference's error.
    const KF_REAL shift = xr[0];
    KF_REAL sum = 0;
    for (int64_t j = 0; j < cols; ++j) sum += xr[j] - shift;
    const KF_REAL mean = shift + sum / n;
    KF_REAL ssq = 0;
    for (int64_t j = 0; j < cols; ++j) {
      const KF_REAL d = xr[j] - mean;
      ssq += d * d;
    }
    const KF_REAL var = ssq / n;
    const KF_REAL rstd = KF_REAL(1) / std::sqrt(var + eps);
    for (int64_t j = 0; j < cols; ++j) yr[j] = (xr[j] - mean) * rstd * gamma[j] + beta[j];
  }
  return 0;
}
