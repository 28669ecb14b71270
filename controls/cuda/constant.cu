// Control 'constant': every output element is 1 in its dtype (1.0 for real types, 1 for
// integers, true for bool). A problem this passes has outputs that do not vary, or a
// tolerance that admits a constant.
#include "control.cuh"

KF_EXPORT int kf_forward(const kf_args* a) {
  for (int k = 0; k < a->num_outputs; ++k) {
    const kf_tensor& y = a->outputs[k];
    if (kf_control::element_size(y.dtype) == 0) return 1;
    kf_control::fill<<<kf_control::blocks_for(kf_control::numel(y)), kf_control::threads, 0, kf_control::stream_of(a)>>>(
        y, kf_control::one_of(y.dtype));
  }
  return cudaGetLastError() == cudaSuccess ? 0 : 2;
}
