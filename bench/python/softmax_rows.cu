// The kernel of tests/gpu/data/softmax_load_inline.py, character for character, as a kf_forward
// candidate: bench/python_candidates.sh times the two on tests/gpu/problems/softmax_small, and
// the difference is what the Python path costs per call (the ModelNew call and the copy of its
// result into kforge's output buffer).
#include <kforge/kernel.h>
#include <cuda_runtime.h>

__global__ void softmax_rows(const float* x, float* y, int cols) {
  const float* xr = x + (size_t)blockIdx.x * cols;
  float* yr = y + (size_t)blockIdx.x * cols;
  __shared__ float red[32];
  float m = -INFINITY;
  for (int j = threadIdx.x; j < cols; j += blockDim.x) m = fmaxf(m, xr[j]);
  for (int o = 16; o; o >>= 1) m = fmaxf(m, __shfl_xor_sync(0xffffffff, m, o));
  if (threadIdx.x % 32 == 0) red[threadIdx.x / 32] = m;
  __syncthreads();
  m = -INFINITY;
  for (int w = 0; w < blockDim.x / 32; ++w) m = fmaxf(m, red[w]);
  __syncthreads();
  float s = 0;
  for (int j = threadIdx.x; j < cols; j += blockDim.x) s += __expf(xr[j] - m);
  for (int o = 16; o; o >>= 1) s += __shfl_xor_sync(0xffffffff, s, o);
  if (threadIdx.x % 32 == 0) red[threadIdx.x / 32] = s;
  __syncthreads();
  s = 0;
  for (int w = 0; w < blockDim.x / 32; ++w) s += red[w];
  for (int j = threadIdx.x; j < cols; j += blockDim.x) yr[j] = __expf(xr[j] - m) / s;
}

KF_EXPORT int kf_forward(const kf_args* a) {
  const kf_tensor& x = a->inputs[0];
  softmax_rows<<<x.shape[0], 256, 0, static_cast<cudaStream_t>(a->stream)>>>(
      static_cast<const float*>(x.data), static_cast<float*>(a->outputs[0].data), static_cast<int>(x.shape[1]));
  return cudaGetLastError() == cudaSuccess ? 0 : 1;
}
