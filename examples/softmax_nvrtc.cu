// A kernel-only candidate for problems/softmax: device code alone, built by NVRTC in well
// under a second, launched by kforge from the directive below (docs/candidates.md).
//   kforge eval problems/softmax examples/softmax_nvrtc.cu
//
// One block per row, one pass to find the row's max and its sum of exponentials together
// (online softmax: the running sum is rescaled when the max grows), one pass to write.
//
// kforge: launch softmax_online<512><<<x.shape[0], 512>>>(x, y, x.shape[1])

// Merges a partial (m2, s2) into (m, s): s is a sum of exp(v - m). exp(-inf - -inf) would
// be NaN, so an empty partial (m = -inf, s = 0) contributes nothing.
__device__ void merge(float& m, float& s, float m2, float s2) {
  if (m2 == -INFINITY) return;
  if (m2 > m) s = (m == -INFINITY ? 0.f : s * expf(m - m2)) + s2, m = m2;
  else s += s2 * expf(m2 - m);
}

template <int threads>
__global__ void softmax_online(const float* __restrict__ x, float* __restrict__ y, long long cols) {
  __shared__ float sm[threads / 32], ss[threads / 32];
  const float* xr = x + blockIdx.x * cols;
  float* yr = y + blockIdx.x * cols;
  float m = -INFINITY, s = 0.f;
  for (long long j = threadIdx.x; j < cols; j += threads) merge(m, s, xr[j], 1.f);
  for (int o = 16; o > 0; o >>= 1)
    merge(m, s, __shfl_xor_sync(0xffffffffu, m, o), __shfl_xor_sync(0xffffffffu, s, o));
  if (threadIdx.x % 32 == 0) sm[threadIdx.x / 32] = m, ss[threadIdx.x / 32] = s;
  __syncthreads();
  m = sm[0], s = ss[0];
  for (int w = 1; w < threads / 32; ++w) merge(m, s, sm[w], ss[w]);
  const float inv = 1.f / s;
  for (long long j = threadIdx.x; j < cols; j += threads) yr[j] = expf(xr[j] - m) * inv;
}
