// kforge-adversarial: problem=softmax_small expect=tolerance
// Cheat/failure: writes zeros with cudaMemsetAsync.
#include "softmax_common.cuh"
KF_EXPORT int kf_forward(const kf_args* a) { cudaMemsetAsync(a->outputs[0].data, 0, 4 * a->outputs[0].shape[0] * a->outputs[0].shape[1], (cudaStream_t)a->stream); return 0; }
