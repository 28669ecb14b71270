// kforge-adversarial: problem=softmax_small expect=timeout
// Cheat/failure: a kernel that never ends.
#include "softmax_common.cuh"
__device__ int never_set;
__global__ void spin() { while (*(volatile int*)&never_set == 0) {} }
KF_EXPORT int kf_forward(const kf_args* a) { spin<<<1, 1, 0, (cudaStream_t)a->stream>>>(); return 0; }
