// Control 'zeros': every output element is all zero bytes (0.0, or 0 for integers).
// A problem this passes cannot tell an answer from no answer: its outputs are zero on its
// inputs, or its tolerance admits zero.
#include "control.cuh"

KF_EXPORT int kf_forward(const kf_args* a) {
  for (int k = 0; k < a->num_outputs; ++k) {
    const kf_tensor& y = a->outputs[k];
    const size_t size = kf_control::element_size(y.dtype);
    if (size == 0) return 1;
    const int64_t n = kf_control::numel(y);
    if (kf_control::contiguous(y)) {
      if (cudaMemsetAsync(y.data, 0, static_cast<size_t>(n) * size, kf_control::stream_of(a)) != cudaSuccess) return 2;
    } else {
      kf_control::fill<<<kf_control::blocks_for(n), kf_control::threads, 0, kf_control::stream_of(a)>>>(y, 0);
    }
  }
  return cudaGetLastError() == cudaSuccess ? 0 : 2;
}
