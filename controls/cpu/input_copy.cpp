// Control 'input_copy': every output is filled with input 0's bytes, in logical order,
// repeated or cut off to fit. Bytes, not values: the copy needs no conversion when the
// dtypes differ, and a problem whose output equals its input passes either way.
#include "control.h"

KF_EXPORT int kf_forward(const kf_args* a) {
  if (a->num_inputs < 1) return 1; // nothing to copy (problem.toml requires an input)
  const kf_tensor& x = a->inputs[0];
  const int64_t in_size = static_cast<int64_t>(kf_control::element_size(x.dtype));
  if (in_size == 0) return 1;
  const int64_t in_bytes = kf_control::numel(x) * in_size;
  for (int k = 0; k < a->num_outputs; ++k) {
    const kf_tensor& y = a->outputs[k];
    const int64_t out_size = static_cast<int64_t>(kf_control::element_size(y.dtype));
    if (out_size == 0) return 1;
    for (int64_t i = 0, n = kf_control::numel(y); i < n; ++i) {
      unsigned char* dst = kf_control::element(y, i);
      for (int64_t b = 0; b < out_size; ++b) {
        const int64_t s = (i * out_size + b) % in_bytes; // the s-th byte of input 0
        dst[b] = kf_control::element(x, s / in_size)[s % in_size];
      }
    }
  }
  return 0;
}
