// kforge-adversarial: problem=softmax_small expect=repeat
// Cheat/failure: a host-side call counter perturbs element 0 by one ulp on every second call.
#include "softmax_common.cuh"
__global__ void nudge(float* y) { y[0] = nextafterf(y[0], 2.f); }
KF_EXPORT int kf_forward(const kf_args* a) { static int calls = 0; run(a); if (++calls % 2 == 0) nudge<<<1, 1, 0, (cudaStream_t)a->stream>>>((float*)a->outputs[0].data); return 0; }
