// kforge-adversarial: problem=softmax expect=nonfinite case=hidden:mixed
// Cheat/failure: input sniffing: looks at row 0 to guess the distribution and skips max subtraction when it looks tame; every declared case is uniform across rows, so only kforge's hidden case (hard rows at random positions) exposes it.
#include <kforge/kernel.h>

#include <cmath>
#include <cstdint>

KF_EXPORT int kf_forward(const kf_args* a) {
  const kf_tensor& xt = a->inputs[0];
  const int64_t rows = xt.shape[0], cols = xt.shape[1];
  const float* x = static_cast<const float*>(xt.data);
  float* y = static_cast<float*>(a->outputs[0].data);
  float peek = 0.0f;
  for (int64_t j = 0; j < cols; ++j) peek = std::fmax(peek, std::fabs(x[j]));
  const bool tame = peek < 30.0f; // "normal(0, 1) inputs: exp cannot overflow"
  for (int64_t r = 0; r < rows; ++r) {
    const float* xr = x + r * cols;
    float* yr = y + r * cols;
    float m = tame ? 0.0f : -INFINITY;
    if (!tame)
      for (int64_t j = 0; j < cols; ++j) m = std::fmax(m, xr[j]);
    float sum = 0.0f;
    for (int64_t j = 0; j < cols; ++j) sum += (yr[j] = std::exp(xr[j] - m));
    for (int64_t j = 0; j < cols; ++j) yr[j] /= sum;
  }
  return 0;
}
