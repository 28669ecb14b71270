// kforge-adversarial: problem=softmax_small expect=build_failed
// Cheat/failure: kernel-only (NVRTC): does not compile; NVRTC's message is the diagnosis.
// kforge: launch k<<<1, 32>>>(y)
extern "C" __global__ void k(float* y) { y[0] = undeclared_name; }
