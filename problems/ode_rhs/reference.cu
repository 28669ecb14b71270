// dy = f(y) for a bimolecular network, one thread per zone, reactions in order,
// accumulated in KF_REAL (double: this problem's reference is its own oracle).
#include <kforge/kernel.h>
#include <cuda_runtime.h>

namespace {
constexpr int species = 100;

__global__ void rhs(const KF_REAL* __restrict__ y, const KF_REAL* __restrict__ k, const int* __restrict__ a,
                    const int* __restrict__ b, const int* __restrict__ c, KF_REAL* __restrict__ dy, int zones,
                    int reactions) {
  const int z = blockIdx.x * blockDim.x + threadIdx.x;
  if (z >= zones) return;
  const KF_REAL* yz = y + (long)z * species;
  KF_REAL* dz = dy + (long)z * species;
  for (int s = 0; s < species; ++s) dz[s] = 0;
  for (int t = 0; t < reactions; ++t) {
    const KF_REAL r = k[t] * yz[a[t]] * yz[b[t]];
    dz[a[t]] -= r;
    dz[b[t]] -= r;
    dz[c[t]] += r;
  }
}
} // namespace

KF_EXPORT int kf_forward(const kf_args* a) {
  if (a->num_inputs != 5 || a->num_outputs != 1 || a->inputs[0].shape[1] != species) return 1;
  const int zones = a->inputs[0].shape[0], reactions = a->inputs[1].shape[0];
  rhs<<<(zones + 127) / 128, 128, 0, static_cast<cudaStream_t>(a->stream)>>>(
      static_cast<const KF_REAL*>(a->inputs[0].data), static_cast<const KF_REAL*>(a->inputs[1].data),
      static_cast<const int*>(a->inputs[2].data), static_cast<const int*>(a->inputs[3].data),
      static_cast<const int*>(a->inputs[4].data), static_cast<KF_REAL*>(a->outputs[0].data), zones, reactions);
  return cudaGetLastError() == cudaSuccess ? 0 : 2;
}
