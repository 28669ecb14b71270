// kforge-adversarial: problem=softmax_small expect=repeat
// Cheat/failure: a race on the order of floating-point additions: each row's exp-sum is accumulated with atomicAdd from many blocks, accurate enough for the tolerance but different from run to run (float addition is not associative).
#include "softmax_common.cuh"
constexpr int parts = 16; // blocks per row
__global__ void row_max(const float* x, float* m, long cols) {
  __shared__ float red[256];
  float v = -INFINITY;
  for (long j = threadIdx.x; j < cols; j += 256) v = fmaxf(v, x[blockIdx.x * cols + j]);
  red[threadIdx.x] = v;
  __syncthreads();
  for (int o = 128; o > 0; o >>= 1) {
    if (threadIdx.x < o) red[threadIdx.x] = fmaxf(red[threadIdx.x], red[threadIdx.x + o]);
    __syncthreads();
  }
  if (threadIdx.x == 0) m[blockIdx.x] = red[0];
}
__global__ void partial_sums(const float* x, const float* m, float* s, long cols) {
  const long row = blockIdx.x / parts, part = blockIdx.x % parts, chunk = cols / parts;
  float v = 0.f;
  for (long j = part * chunk + threadIdx.x; j < (part + 1) * chunk; j += 256) v += expf(x[row * cols + j] - m[row]);
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  if (threadIdx.x % 32 == 0) atomicAdd(&s[row], v); // 8 warps x 16 blocks per row, in whatever order they finish
}
__global__ void normalise(const float* x, const float* m, const float* s, float* y, long cols) {
  for (long j = threadIdx.x; j < cols; j += 256) y[blockIdx.x * cols + j] = expf(x[blockIdx.x * cols + j] - m[blockIdx.x]) / s[blockIdx.x];
}
KF_EXPORT size_t kf_workspace_bytes(const kf_args* a) { return 2 * a->inputs[0].shape[0] * sizeof(float); }
KF_EXPORT int kf_forward(const kf_args* a) {
  const long rows = a->inputs[0].shape[0], cols = a->inputs[0].shape[1];
  cudaStream_t st = (cudaStream_t)a->stream;
  const float* x = (const float*)a->inputs[0].data;
  float* m = (float*)a->workspace;
  float* s = m + rows;
  cudaMemsetAsync(s, 0, rows * sizeof(float), st);
  row_max<<<rows, 256, 0, st>>>(x, m, cols);
  partial_sums<<<rows * parts, 256, 0, st>>>(x, m, s, cols);
  normalise<<<rows, 256, 0, st>>>(x, m, s, (float*)a->outputs[0].data, cols);
  return 0;
}
