// kforge-adversarial: problem=softmax_small expect=nonfinite case=hidden:mixed
// Cheat/failure: input sniffing: reads row 0 back to the host and skips max subtraction when it looks tame; the declared cases are uniform across rows, so only kforge's hidden case (hard rows at random positions) exposes it.
#include "softmax_common.cuh"
#include <vector>
KF_EXPORT int kf_forward(const kf_args* a) {
  const long cols = a->inputs[0].shape[1];
  std::vector<float> row0(cols);
  cudaMemcpyAsync(row0.data(), a->inputs[0].data, cols * sizeof(float), cudaMemcpyDeviceToHost, (cudaStream_t)a->stream);
  cudaStreamSynchronize((cudaStream_t)a->stream);
  float peek = 0.f;
  for (float v : row0) peek = fmaxf(peek, fabsf(v));
  run(a, /*subtract_max=*/peek >= 30.f); // "normal(0, 1) inputs: exp cannot overflow"
  return 0;
}
