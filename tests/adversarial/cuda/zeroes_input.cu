// kforge-adversarial: problem=softmax_small expect=inputs_modified
// Cheat/failure: correct, then zeroes its input on the device.
#include "softmax_common.cuh"
KF_EXPORT int kf_forward(const kf_args* a) { run(a); cudaMemsetAsync(a->inputs[0].data, 0, 64, (cudaStream_t)a->stream); return 0; }
