// kforge-adversarial: problem=softmax_small expect=timed_output
// Cheat/failure: result caching keyed on the output's address, switched on once it has seen three output buffers (timing rotates through three or more; verification uses one or two): each timed call replays an old answer with one device copy.
#include "softmax_common.cuh"
#include <map>
KF_EXPORT int kf_forward(const kf_args* a) {
  static std::map<void*, void*> answers;
  const size_t bytes = a->outputs[0].shape[0] * a->outputs[0].shape[1] * sizeof(float);
  cudaStream_t s = (cudaStream_t)a->stream;
  auto hit = answers.find(a->outputs[0].data);
  if (answers.size() >= 3 && hit != answers.end())
    return cudaMemcpyAsync(a->outputs[0].data, hit->second, bytes, cudaMemcpyDeviceToDevice, s) == cudaSuccess ? 0 : 1;
  run(a);
  void* keep = nullptr;
  cudaMalloc(&keep, bytes);
  cudaMemcpyAsync(keep, a->outputs[0].data, bytes, cudaMemcpyDeviceToDevice, s);
  answers[a->outputs[0].data] = keep;
  return 0;
}
