// kforge-adversarial: problem=softmax_small expect=device_error
// Cheat/failure: kernel-only (NVRTC): a kernel writes through a wild pointer, a sticky fault of the launch kforge made for it.
// kforge: launch wild<<<1, 32>>>(y)
extern "C" __global__ void wild(float* p) { p[threadIdx.x + (1LL << 40)] = 1.f; }
