// kforge-adversarial: problem=softmax_small expect=inputs_modified
// Cheat/failure: computes the right answer, then zeroes its input from a kernel on its own stream that starts late, after args->stream is done: the input it shares with the judge changes while nobody is looking, unless the judge compares it after the call.
#include "softmax_common.cuh"
__global__ void late_zero(float* x, long n) {
  for (int i = 0; i < 3; ++i) __nanosleep(1000000);
  for (long i = blockIdx.x * (long)blockDim.x + threadIdx.x; i < n; i += (long)gridDim.x * blockDim.x) x[i] = 0.f;
}
KF_EXPORT int kf_forward(const kf_args* a) {
  static cudaStream_t s;
  if (!s) cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
  run(a);
  late_zero<<<64, 256, 0, s>>>((float*)a->inputs[0].data, a->inputs[0].shape[0] * a->inputs[0].shape[1]);
  return 0;
}
