// kforge-adversarial: problem=softmax_small expect=nonfinite case=hidden:mixed
// Cheat/failure: input sniffing: every block looks at row 0 and skips max subtraction when it looks tame; the declared cases are uniform across rows, so only kforge's hidden case (hard rows at random positions) exposes it.
#include "softmax_common.cuh"
__global__ void sniffing(const float* x, float* y, long cols) {
  __shared__ int tame;
  if (threadIdx.x == 0) {
    float peek = 0.f;
    for (long j = 0; j < cols; ++j) peek = fmaxf(peek, fabsf(x[j]));
    tame = peek < 30.f;
  }
  __syncthreads();
  const float* xr = x + blockIdx.x * cols;
  float* yr = y + blockIdx.x * cols;
  __shared__ float red[32];
  float m = -INFINITY;
  for (long j = threadIdx.x; j < cols; j += blockDim.x) m = fmaxf(m, xr[j]);
  for (int o = 16; o > 0; o >>= 1) m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, o));
  if (threadIdx.x % 32 == 0) red[threadIdx.x / 32] = m;
  __syncthreads();
  m = red[0];
  for (int w = 1; w < blockDim.x / 32; ++w) m = fmaxf(m, red[w]);
  __syncthreads();
  if (tame) m = 0.f;
  float s = 0.f;
  for (long j = threadIdx.x; j < cols; j += blockDim.x) s += expf(xr[j] - m);
  for (int o = 16; o > 0; o >>= 1) s += __shfl_xor_sync(0xffffffffu, s, o);
  if (threadIdx.x % 32 == 0) red[threadIdx.x / 32] = s;
  __syncthreads();
  s = 0.f;
  for (int w = 0; w < blockDim.x / 32; ++w) s += red[w];
  for (long j = threadIdx.x; j < cols; j += blockDim.x) yr[j] = expf(xr[j] - m) / s;
}
KF_EXPORT int kf_forward(const kf_args* a) {
  sniffing<<<a->inputs[0].shape[0], 256, 0, (cudaStream_t)a->stream>>>((const float*)a->inputs[0].data,
      (float*)a->outputs[0].data, a->inputs[0].shape[1]);
  return 0;
}
