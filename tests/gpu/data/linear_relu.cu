// A correct CUDA candidate for tests/bridge/data/kb_linear_relu.py imported with --backend
// cuda: y = relu(x @ W^T + b) * 0.5, inputs in ABI order x, linear_weight, linear_bias.
#include <kforge/kernel.h>
#include <cuda_runtime.h>

__global__ void linear_relu(const float* x, const float* w, const float* b, float* y, long n, long k, long m) {
  const long i = blockIdx.x, j = threadIdx.x;
  if (i >= n || j >= m) return;
  double acc = 0; // closer to the float64 oracle than torch's own fp32
  for (long t = 0; t < k; ++t) acc += (double)x[i * k + t] * w[j * k + t];
  const float v = (float)acc + b[j];
  y[i * m + j] = (v > 0 ? v : 0.0f) * 0.5f;
}

KF_EXPORT int kf_forward(const kf_args* a) {
  const long n = a->inputs[0].shape[0], k = a->inputs[0].shape[1], m = a->inputs[1].shape[0];
  if (m > 1024) return 1;
  linear_relu<<<(unsigned)n, (unsigned)m, 0, (cudaStream_t)a->stream>>>(
      (const float*)a->inputs[0].data, (const float*)a->inputs[1].data, (const float*)a->inputs[2].data,
      (float*)a->outputs[0].data, n, k, m);
  return cudaGetLastError() == cudaSuccess ? 0 : 1;
}
