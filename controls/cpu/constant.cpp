// Control 'constant': every output element is 1 in its dtype (1.0 for real types, 1 for
// integers, true for bool). A problem this passes has outputs that do not vary, or a
// tolerance that admits a constant.
#include "control.h"

KF_EXPORT int kf_forward(const kf_args* a) {
  for (int k = 0; k < a->num_outputs; ++k) {
    const kf_tensor& y = a->outputs[k];
    const size_t size = kf_control::element_size(y.dtype);
    if (size == 0) return 1;
    unsigned char one[8];
    kf_control::one_of(y.dtype, one);
    for (int64_t i = 0, n = kf_control::numel(y); i < n; ++i) std::memcpy(kf_control::element(y, i), one, size);
  }
  return 0;
}
