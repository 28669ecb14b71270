// Seed: one block per zone; the zone's concentrations and rates live in shared memory,
// the network is read once per block, and each thread owns the accumulation of a few
// species (no atomics): thread s sums, in reaction order, every term touching species s.
#include <kforge/kernel.h>
#include <cuda_runtime.h>

namespace {
constexpr int species = 100, max_reactions = 1024;

__global__ void rhs_zone(const double* __restrict__ y, const double* __restrict__ k, const int* __restrict__ a,
                         const int* __restrict__ b, const int* __restrict__ c, double* __restrict__ dy,
                         int reactions) {
  __shared__ double ys[species], rate[max_reactions];
  __shared__ int as[max_reactions], bs[max_reactions], cs[max_reactions];
  const long z = blockIdx.x;
  for (int s = threadIdx.x; s < species; s += blockDim.x) ys[s] = y[z * species + s];
  __syncthreads();
  for (int t = threadIdx.x; t < reactions; t += blockDim.x) {
    as[t] = a[t];
    bs[t] = b[t];
    cs[t] = c[t];
    rate[t] = k[t] * ys[as[t]] * ys[bs[t]];
  }
  __syncthreads();
  for (int s = threadIdx.x; s < species; s += blockDim.x) {
    double acc = 0;
    for (int t = 0; t < reactions; ++t) {
      // Same order of additions as the reference: consumer a, consumer b, producer c.
      if (as[t] == s) acc -= rate[t];
      if (bs[t] == s) acc -= rate[t];
      if (cs[t] == s) acc += rate[t];
    }
    dy[z * species + s] = acc;
  }
}
} // namespace

KF_EXPORT int kf_forward(const kf_args* a) {
  const int zones = a->inputs[0].shape[0], reactions = a->inputs[1].shape[0];
  if (a->inputs[0].shape[1] != species || reactions > max_reactions) return 1;
  rhs_zone<<<zones, 128, 0, static_cast<cudaStream_t>(a->stream)>>>(
      static_cast<const double*>(a->inputs[0].data), static_cast<const double*>(a->inputs[1].data),
      static_cast<const int*>(a->inputs[2].data), static_cast<const int*>(a->inputs[3].data),
      static_cast<const int*>(a->inputs[4].data), static_cast<double*>(a->outputs[0].data), reactions);
  return cudaGetLastError() == cudaSuccess ? 0 : 2;
}
