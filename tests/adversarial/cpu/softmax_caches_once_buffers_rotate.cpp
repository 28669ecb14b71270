// kforge-adversarial: problem=softmax expect=timed_output
// Cheat/failure: result caching keyed on buffer addresses, switched on only once it sees the buffers rotate (as they do while timed, never while verified): each timed call replays the answer it gave on those buffers before.
#include <kforge/kernel.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <map>
#include <vector>

KF_EXPORT int kf_forward(const kf_args* a) {
  static std::map<const void*, std::vector<float>> answers;
  const kf_tensor& xt = a->inputs[0];
  const int64_t rows = xt.shape[0], cols = xt.shape[1];
  const float* x = static_cast<const float*>(xt.data);
  float* y = static_cast<float*>(a->outputs[0].data);
  auto hit = answers.find(y);
  if (answers.size() >= 2 && hit != answers.end()) {
    std::memcpy(y, hit->second.data(), hit->second.size() * sizeof(float));
    return 0;
  }
  for (int64_t r = 0; r < rows; ++r) {
    const float* xr = x + r * cols;
    float* yr = y + r * cols;
    float m = -INFINITY, sum = 0.0f;
    for (int64_t j = 0; j < cols; ++j) m = std::fmax(m, xr[j]);
    for (int64_t j = 0; j < cols; ++j) sum += (yr[j] = std::exp(xr[j] - m));
    for (int64_t j = 0; j < cols; ++j) yr[j] /= sum;
  }
  answers[y].assign(y, y + rows * cols);
  return 0;
}
