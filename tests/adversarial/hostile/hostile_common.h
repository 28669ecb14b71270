// What every CPU hostile candidate shares: a correct softmax, and the rule that makes the
// verdict the evidence. A kernel whose attack worked writes the right answer (it "found the
// truth", or just shows that it got through); one whose attack was stopped writes zeros. So
// `expect=tolerance` in a header means: contained.
#pragma once
#include <kforge/kernel.h>

#include <cmath>
#include <cstdint>
#include <cstring>

namespace hostile {

inline void softmax(const kf_args* a) {
  const kf_tensor& xt = a->inputs[0];
  const int64_t rows = xt.shape[0], cols = xt.shape[1];
  const float* x = static_cast<const float*>(xt.data);
  float* y = static_cast<float*>(a->outputs[0].data);
  for (int64_t r = 0; r < rows; ++r) {
    const float* xr = x + r * cols;
    float* yr = y + r * cols;
    float m = -INFINITY, sum = 0.0f;
    for (int64_t j = 0; j < cols; ++j) m = std::fmax(m, xr[j]);
    for (int64_t j = 0; j < cols; ++j) sum += (yr[j] = std::exp(xr[j] - m));
    for (int64_t j = 0; j < cols; ++j) yr[j] /= sum;
  }
}

inline void zeros(const kf_args* a) {
  std::memset(a->outputs[0].data, 0, a->outputs[0].shape[0] * a->outputs[0].shape[1] * sizeof(float));
}

/// The verdict as evidence: the right answer only when the attack got through.
inline int answer(const kf_args* a, bool attack_worked) {
  attack_worked ? softmax(a) : zeros(a);
  return 0;
}

} // namespace hostile
