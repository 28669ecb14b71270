// kforge-adversarial: problem=softmax_small expect=build_failed
// Cheat/failure: does not compile.
#include "softmax_common.cuh"
KF_EXPORT int kf_forward(const kf_args* a) { return undefined_symbol_here; }
