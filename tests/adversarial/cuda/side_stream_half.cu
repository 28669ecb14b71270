// kforge-adversarial: problem=softmax_small expect=side_stream
// Cheat/failure: computes on its own stream (outside args->stream), starting late, and only half the rows; the outputs change after args->stream is done, and kforge's device-wide sync makes the missing rows show too.
#include "softmax_common.cuh"
__global__ void late() { for (int i = 0; i < 5; ++i) __nanosleep(1000000); }
KF_EXPORT int kf_forward(const kf_args* a) { static cudaStream_t s; if (!s) cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
  late<<<1, 1, 0, s>>>();
  sm<<<a->inputs[0].shape[0] / 2, 256, 0, s>>>((const float*)a->inputs[0].data, (float*)a->outputs[0].data, a->inputs[0].shape[1], true); return 0; }
