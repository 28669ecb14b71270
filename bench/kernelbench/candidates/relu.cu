// ReLU, vectorised: four floats per thread per step, a grid-stride loop.
#include <kforge/kernel.h>
#include <cuda_runtime.h>

__global__ void relu4(const float4* __restrict__ x, float4* __restrict__ y, long n4) {
  for (long i = blockIdx.x * (long)blockDim.x + threadIdx.x; i < n4; i += (long)gridDim.x * blockDim.x) {
    float4 v = x[i];
    v.x = fmaxf(v.x, 0.f), v.y = fmaxf(v.y, 0.f), v.z = fmaxf(v.z, 0.f), v.w = fmaxf(v.w, 0.f);
    y[i] = v;
  }
}

__global__ void relu1(const float* __restrict__ x, float* __restrict__ y, long from, long n) {
  long i = from + blockIdx.x * (long)blockDim.x + threadIdx.x;
  if (i < n) y[i] = fmaxf(x[i], 0.f);
}

KF_EXPORT int kf_forward(const kf_args* a) {
  long n = 1;
  for (int d = 0; d < a->inputs[0].ndim; ++d) n *= a->inputs[0].shape[d];
  auto s = (cudaStream_t)a->stream;
  const long n4 = n / 4;
  if (n4) relu4<<<132 * 8, 256, 0, s>>>((const float4*)a->inputs[0].data, (float4*)a->outputs[0].data, n4);
  if (n % 4) relu1<<<1, 4, 0, s>>>((const float*)a->inputs[0].data, (float*)a->outputs[0].data, n4 * 4, n);
  return cudaGetLastError() == cudaSuccess ? 0 : 1;
}
