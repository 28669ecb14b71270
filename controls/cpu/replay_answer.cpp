// Control 'other_seed' of a problem whose reference is a PyTorch module (no kf_forward to
// call here): the module's answer for other inputs, computed by kforge check through the
// bridge and stored in KF_ANSWER_FILE (every output's bytes, in ABI order), copied out on
// every call. A problem this passes has an answer that does not depend on its inputs' values.
#include "control.h"

#include "../answer_file.h"

#include <cstring>

KF_EXPORT int kf_forward(const kf_args* a) {
  const auto& bytes = kf_control::answer();
  size_t at = 0;
  for (int k = 0; k < a->num_outputs; ++k) {
    const kf_tensor& y = a->outputs[k];
    const size_t n = static_cast<size_t>(kf_control::numel(y)) * kf_control::element_size(y.dtype);
    if (n == 0 || at + n > bytes.size() || kf_control::span(y) != kf_control::numel(y)) return 1;
    std::memcpy(y.data, bytes.data() + at, n);
    at += n;
  }
  return at == bytes.size() ? 0 : 1;
}
