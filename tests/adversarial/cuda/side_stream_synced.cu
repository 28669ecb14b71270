// kforge-adversarial: problem=softmax_small expect=side_stream
// Cheat/failure: computes the whole answer on a stream of its own and waits for it before returning, so the outputs are complete when the call returns and nothing changes afterwards; only watching where its kernels are launched shows that args->stream (what the timer measures) did none of the work.
#include "softmax_common.cuh"
KF_EXPORT int kf_forward(const kf_args* a) {
  static cudaStream_t s;
  if (!s) cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
  sm<<<a->inputs[0].shape[0], 256, 0, s>>>((const float*)a->inputs[0].data, (float*)a->outputs[0].data, a->inputs[0].shape[1], true);
  cudaStreamSynchronize(s);
  return 0;
}
