// kforge-adversarial: problem=softmax expect=returned_error
// Cheat/failure: hardcodes the shape it was written for ([*, 2048]) and returns 2 on the problem's valid [512, 1024] input.
#include <kforge/kernel.h>

#include <cmath>
#include <cstdint>

KF_EXPORT int kf_forward(const kf_args* a) {
  if (a->num_inputs != 1 || a->num_outputs != 1) return 1;
  const kf_tensor& xt = a->inputs[0];
  const kf_tensor& yt = a->outputs[0];
  if (xt.dtype != KF_F32 || yt.dtype != KF_F32 || xt.ndim != 2) return 1;
  const int64_t rows = xt.shape[0];
  const int64_t cols = 2048;             // the flaw: assumed, then "checked" against the real shape
  if (xt.shape[1] != cols) return 2;
  const float* x = static_cast<const float*>(xt.data);
  float* y = static_cast<float*>(yt.data);
  for (int64_t r = 0; r < rows; ++r) {
    const float* xr = x + r * cols;
    float* yr = y + r * cols;
    float m = xr[0];
    for (int64_t j = 1; j < cols; ++j) m = xr[j] > m ? xr[j] : m;
    float sum = 0.0f;
    for (int64_t j = 0; j < cols; ++j) sum += (yr[j] = std::exp(xr[j] - m));
    for (int64_t j = 0; j < cols; ++j) yr[j] /= sum;
  }
  return 0;
}
