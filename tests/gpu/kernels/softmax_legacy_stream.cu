// A correct softmax launched the way most published load_inline kernels are: a bare
// <<<grid, block>>>, on the legacy default stream, after a 2 ms wait on the GPU. kforge's
// args->stream is a blocking stream, so CUDA orders this kernel inside the call's events:
// it passes (the answer is read after it) and its time includes the wait.
// The test copies it beside tests/adversarial/cuda/softmax_common.cuh (the softmax the
// adversaries share): the confined compiler reads the candidate's folder and nothing outside it.
#include "softmax_common.cuh"
__global__ void wait_ns(unsigned long long ns) {
  unsigned long long t0, t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t0));
  do asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t)); while (t - t0 < ns);
}
KF_EXPORT int kf_forward(const kf_args* a) {
  wait_ns<<<1, 1>>>(2000000ull);
  sm<<<a->inputs[0].shape[0], 256>>>((const float*)a->inputs[0].data, (float*)a->outputs[0].data,
                                     a->inputs[0].shape[1], true);
  return 0;
}
