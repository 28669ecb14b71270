// kforge-adversarial: problem=softmax_small expect=unwritten
// Cheat/failure: kernel-only (NVRTC): a correct row softmax launched over half the rows.
// kforge: launch softmax_rows<<<x.shape[0] / 2, 256>>>(x, y, x.shape[1])
extern "C" __global__ void softmax_rows(const float* x, float* y, long long cols) {
  __shared__ float red[256];
  const float* xr = x + blockIdx.x * cols;
  float* yr = y + blockIdx.x * cols;
  float m = -INFINITY, s = 0.f;
  for (long long j = threadIdx.x; j < cols; j += 256) m = fmaxf(m, xr[j]);
  red[threadIdx.x] = m;
  __syncthreads();
  for (int o = 128; o > 0; o >>= 1) {
    if (threadIdx.x < o) red[threadIdx.x] = fmaxf(red[threadIdx.x], red[threadIdx.x + o]);
    __syncthreads();
  }
  m = red[0];
  __syncthreads();
  for (long long j = threadIdx.x; j < cols; j += 256) s += expf(xr[j] - m);
  red[threadIdx.x] = s;
  __syncthreads();
  for (int o = 128; o > 0; o >>= 1) {
    if (threadIdx.x < o) red[threadIdx.x] += red[threadIdx.x + o];
    __syncthreads();
  }
  s = red[0];
  for (long long j = threadIdx.x; j < cols; j += 256) yr[j] = expf(xr[j] - m) / s;
}
