// kforge-adversarial: problem=softmax_small expect=load_failed
// Cheat/failure: kernel-only (NVRTC): the launch directive passes two arguments to a kernel of three parameters; launched anyway, it would read garbage.
// kforge: launch k<<<x.shape[0], 256>>>(x, y)
extern "C" __global__ void k(const float* x, float* y, long long cols) { y[blockIdx.x * cols] = x[0]; }
