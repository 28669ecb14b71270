// kforge-adversarial: problem=softmax_small expect=returned_error
// Cheat/failure: kernel-only (NVRTC): a grid computed from the shapes exceeds CUDA's limit; kforge refuses the launch and names the expression.
// kforge: launch k<<<x.numel * x.numel, 256>>>(x, y)
extern "C" __global__ void k(const float* x, float* y) { y[0] = x[0]; }
