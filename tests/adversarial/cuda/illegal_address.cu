// kforge-adversarial: problem=softmax_small expect=device_error
// Cheat/failure: a kernel writes through a wild pointer: an illegal address, sticky for the context.
#include "softmax_common.cuh"
__global__ void wild(float* p) { p[threadIdx.x + (1L << 40)] = 1.f; }
KF_EXPORT int kf_forward(const kf_args* a) { wild<<<1, 32, 0, (cudaStream_t)a->stream>>>((float*)a->outputs[0].data); return 0; }
