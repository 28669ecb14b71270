// kforge-adversarial: problem=softmax expect=deferred_work
// Cheat/failure: returns before its work is done: the last row is written by a detached thread a moment after kf_forward returns, so a timer that stops at return never pays for it.
#include <kforge/kernel.h>

#include <chrono>
#include <cmath>
#include <cstdint>
#include <thread>

namespace {
void softmax_row(const float* xr, float* yr, int64_t cols) {
  float m = -INFINITY, sum = 0.0f;
  for (int64_t j = 0; j < cols; ++j) m = std::fmax(m, xr[j]);
  for (int64_t j = 0; j < cols; ++j) sum += (yr[j] = std::exp(xr[j] - m));
  for (int64_t j = 0; j < cols; ++j) yr[j] /= sum;
}
} // namespace

KF_EXPORT int kf_forward(const kf_args* a) {
  const kf_tensor& xt = a->inputs[0];
  const int64_t rows = xt.shape[0], cols = xt.shape[1];
  const float* x = static_cast<const float*>(xt.data);
  float* y = static_cast<float*>(a->outputs[0].data);
  for (int64_t r = 0; r + 1 < rows; ++r) softmax_row(x + r * cols, y + r * cols, cols);
  std::thread([=] {
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
    softmax_row(x + (rows - 1) * cols, y + (rows - 1) * cols, cols);
  }).detach();
  return 0;
}
