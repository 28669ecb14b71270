// kforge-adversarial: problem=softmax_small expect=deferred_work
// Cheat: returns at once and enqueues the softmax from a host thread 2 ms later on the legacy default stream (a bare <<<>>>), which is ordered with args->stream but launched after the call: untimed work.
#include "softmax_common.cuh"
#include <chrono>
#include <thread>
KF_EXPORT int kf_forward(const kf_args* a) {
  const kf_tensor x = a->inputs[0];
  const kf_tensor y = a->outputs[0];
  std::thread([x, y] {
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
    sm<<<x.shape[0], 256>>>((const float*)x.data, (float*)y.data, x.shape[1], true);
  }).detach();
  return 0;
}
