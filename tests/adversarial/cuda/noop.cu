// kforge-adversarial: problem=softmax_small expect=unwritten
// Cheat/failure: launches nothing.
#include "softmax_common.cuh"
KF_EXPORT int kf_forward(const kf_args* a) { (void)a; return 0; }
