// kforge-adversarial: problem=gelu expect=protocol_error
// Cheat/failure: computes gelu correctly, then writes a well-formed "done" frame with a guessed (all-zero) nonce onto descriptor 3, the worker's result channel.
#include <kforge/kernel.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <unistd.h>

KF_EXPORT int kf_forward(const kf_args* a) {
  if (a->num_inputs != 1 || a->num_outputs != 1) return 1;
  const kf_tensor& xt = a->inputs[0];
  if (xt.dtype != KF_F32 || a->outputs[0].dtype != KF_F32) return 2;
  int64_t n = 1;
  for (int d = 0; d < xt.ndim; ++d) n *= xt.shape[d];
  const float* x = static_cast<const float*>(xt.data);
  float* y = static_cast<float*>(a->outputs[0].data);
  for (int64_t i = 0; i < n; ++i) {
    const float v = x[i];
    y[i] = 0.5f * v * (1.0f + std::tanh(0.7978845608f * (v + 0.044715f * v * v * v)));
  }
  // "KFW1" | nonce (16 bytes) | u32 header length | JSON header | u64 payload length, as in
  // src/worker/protocol.hpp, but the nonce is a guess (all zeros).
  const char header[] = "{\"type\":\"done\",\"status\":\"passed\"}";
  const uint32_t header_len = sizeof header - 1;
  const uint64_t payload_len = 0;
  char frame[4 + 16 + 4 + sizeof header + 8] = {'K', 'F', 'W', '1'};
  std::memcpy(frame + 20, &header_len, 4);
  std::memcpy(frame + 24, header, header_len);
  std::memcpy(frame + 24 + header_len, &payload_len, 8);
  if (::write(3, frame, 24 + header_len + 8) < 0) {
    // no channel there: nothing to forge
  }
  return 0;
}
