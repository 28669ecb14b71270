// kforge-adversarial: problem=softmax expect=repeat
// Cheat/failure: reads its workspace before writing it: the first word (meant to hold a start offset set by a setup step that never runs) picks where each row's sum starts, so the result depends on the harness's poison and two identical calls disagree bitwise.
#include <kforge/kernel.h>

#include <cmath>
#include <cstdint>
#include <cstring>

// Why not "the first float as the accumulator's start value": the harness poisons the
// workspace with 0xFF bytes (a NaN) and 0x55 bytes (1.5e13), which would make the output
// NaN or wildly wrong and be reported as nonfinite / tolerance before repeat. Here the
// uninitialised word only changes the order of a well-conditioned sum, so every single
// call is accurate and only the repeat comparison can catch it.

KF_EXPORT size_t kf_workspace_bytes(const kf_args* a) {
  (void)a;
  return 64;
}

KF_EXPORT int kf_forward(const kf_args* a) {
  if (a->num_inputs != 1 || a->num_outputs != 1) return 1;
  const kf_tensor& xt = a->inputs[0];
  if (xt.dtype != KF_F32 || a->outputs[0].dtype != KF_F32 || xt.ndim < 1) return 2;
  if (a->workspace == nullptr || a->workspace_bytes < sizeof(uint32_t)) return 3;
  const int64_t cols = xt.shape[xt.ndim - 1];
  int64_t rows = 1;
  for (int d = 0; d < xt.ndim - 1; ++d) rows *= xt.shape[d];
  uint32_t start_word;
  std::memcpy(&start_word, a->workspace, sizeof start_word); // the flaw: never written first
  const int64_t start = static_cast<int64_t>(start_word % static_cast<uint32_t>(cols));
  const float* x = static_cast<const float*>(xt.data);
  float* y = static_cast<float*>(a->outputs[0].data);
  for (int64_t r = 0; r < rows; ++r) {
    const float* xr = x + r * cols;
    float* yr = y + r * cols;
    float m = xr[0];
    for (int64_t j = 1; j < cols; ++j) m = xr[j] > m ? xr[j] : m;
    for (int64_t j = 0; j < cols; ++j) yr[j] = std::exp(xr[j] - m);
    float sum = 0.0f;
    for (int64_t k = 0; k < cols; ++k) sum += yr[(start + k) % cols]; // rotated summation order
    for (int64_t j = 0; j < cols; ++j) yr[j] /= sum;
  }
  return 0;
}
