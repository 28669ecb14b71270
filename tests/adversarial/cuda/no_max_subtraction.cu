// kforge-adversarial: problem=softmax_small expect=nonfinite case=large_logits
// Cheat/failure: no max subtraction: exp overflows on large logits.
#include "softmax_common.cuh"
KF_EXPORT int kf_forward(const kf_args* a) { run(a, false); return 0; }
