// kforge-adversarial: problem=softmax expect=load_failed
// Cheat/failure: a correct softmax whose kf_forward takes a non-const kf_args*: that is a new C++ overload, not the header's extern "C" function, so the exported symbol is C++-mangled and dlsym finds no kf_forward.
#include <kforge/kernel.h>

#include <cmath>
#include <cstdint>

// kernel.h already declares the extern "C" kf_forward(const kf_args*); a definition with that exact
// signature would inherit C linkage even without KF_EXPORT. Dropping the const makes it an overload.
__attribute__((visibility("default"))) int kf_forward(kf_args* a) {
  const kf_tensor& xt = a->inputs[0];
  const kf_tensor& yt = a->outputs[0];
  if (a->num_inputs != 1 || a->num_outputs != 1 || xt.dtype != KF_F32 || yt.dtype != KF_F32 || xt.ndim < 1) return 1;
  const int64_t cols = xt.shape[xt.ndim - 1];
  int64_t rows = 1;
  for (int d = 0; d < xt.ndim - 1; ++d) rows *= xt.shape[d];
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
