// kforge-adversarial: problem=softmax_small expect=guard
// Cheat/failure: correct, then one element written past the end of the output.
#include "softmax_common.cuh"
__global__ void past(float* y, long n) { y[n] = 0.5f; }
KF_EXPORT int kf_forward(const kf_args* a) { run(a); past<<<1, 1, 0, (cudaStream_t)a->stream>>>((float*)a->outputs[0].data, a->outputs[0].shape[0] * a->outputs[0].shape[1]); return 0; }
