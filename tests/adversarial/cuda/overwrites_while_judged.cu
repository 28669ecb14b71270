// kforge-adversarial: problem=softmax_small expect=deferred_work
// Cheat/failure: writes the correct answer, returns, then a host thread keeps overwriting the output with zeros on its own stream for 300 ms, racing whoever reads it after the call (the judge, on the GPU-resident path).
#include "softmax_common.cuh"
#include <chrono>
#include <thread>
KF_EXPORT int kf_forward(const kf_args* a) {
  run(a);
  float* y = (float*)a->outputs[0].data;
  const size_t bytes = a->outputs[0].shape[0] * a->outputs[0].shape[1] * sizeof(float);
  std::thread([y, bytes] {
    cudaStream_t s;
    cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
    const auto end = std::chrono::steady_clock::now() + std::chrono::milliseconds(300);
    std::this_thread::sleep_for(std::chrono::milliseconds(3));
    while (std::chrono::steady_clock::now() < end) {
      cudaMemsetAsync(y, 0, bytes, s);
      cudaStreamSynchronize(s);
    }
  }).detach();
  return 0;
}
