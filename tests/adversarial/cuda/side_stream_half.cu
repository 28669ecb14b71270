// kforge-adversarial: problem=softmax_small expect=unwritten
// Cheat/failure: computes on its own stream (outside args->stream) and only half the rows; kforge syncs the whole device, so the missing rows show.
#include "softmax_common.cuh"
KF_EXPORT int kf_forward(const kf_args* a) { static cudaStream_t s; if (!s) cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
  sm<<<a->inputs[0].shape[0] / 2, 256, 0, s>>>((const float*)a->inputs[0].data, (float*)a->outputs[0].data, a->inputs[0].shape[1], true); return 0; }
