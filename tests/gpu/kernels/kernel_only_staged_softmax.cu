// A correct kernel-only softmax that stages each row in more than 48 KiB of dynamic shared
// memory, so kforge must raise the kernel's limit before launching it.
// kforge: launch staged<<<x.shape[0], 256, max(x.shape[1] * sizeof(float), 64 * 1024)>>>(x, y, x.shape[1])
extern "C" __global__ void staged(const float* x, float* y, long long cols) {
  extern __shared__ float row[];
  __shared__ float red[256];
  const float* xr = x + blockIdx.x * cols;
  float m = -INFINITY;
  for (long long j = threadIdx.x; j < cols; j += 256) row[j] = xr[j], m = fmaxf(m, xr[j]);
  red[threadIdx.x] = m;
  __syncthreads();
  for (int o = 128; o > 0; o >>= 1) {
    if (threadIdx.x < o) red[threadIdx.x] = fmaxf(red[threadIdx.x], red[threadIdx.x + o]);
    __syncthreads();
  }
  m = red[0];
  __syncthreads();
  float s = 0.f;
  for (long long j = threadIdx.x; j < cols; j += 256) s += expf(row[j] - m);
  red[threadIdx.x] = s;
  __syncthreads();
  for (int o = 128; o > 0; o >>= 1) {
    if (threadIdx.x < o) red[threadIdx.x] += red[threadIdx.x + o];
    __syncthreads();
  }
  s = red[0];
  for (long long j = threadIdx.x; j < cols; j += 256) y[blockIdx.x * cols + j] = expf(row[j] - m) / s;
}
