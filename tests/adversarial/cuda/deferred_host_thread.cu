// kforge-adversarial: problem=softmax_small expect=deferred_work
// Cheat/failure: returns at once and enqueues the correct softmax from a host thread 2 ms later, so a timer stopped at return (or at a sync of args->stream) never pays for it.
#include "softmax_common.cuh"
#include <chrono>
#include <thread>
KF_EXPORT int kf_forward(const kf_args* a) {
  const kf_args copy = *a;
  const kf_tensor x = a->inputs[0];
  const kf_tensor y = a->outputs[0];
  std::thread([copy, x, y] {
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
    sm<<<x.shape[0], 256, 0, (cudaStream_t)copy.stream>>>((const float*)x.data, (float*)y.data, x.shape[1], true);
  }).detach();
  return 0;
}
