// A CuTe-flavoured candidate for problems/softmax: the row is a CuTe tensor view
// (shape (rows, cols), stride (cols, 1)) sliced per block; the reductions are plain
// warp shuffles. Shows that CuTe headers are on every nvcc build's include path:
//   build/kforge eval problems/softmax examples/softmax_cute.cu
#include <kforge/kernel.h>

#include <cute/tensor.hpp>

namespace {
constexpr int threads = 256;

template <bool is_max>
__device__ float block_reduce(float v, float* red) {
  for (int o = 16; o > 0; o >>= 1) {
    const float w = __shfl_xor_sync(0xffffffffu, v, o);
    v = is_max ? fmaxf(v, w) : v + w;
  }
  if (threadIdx.x % 32 == 0) red[threadIdx.x / 32] = v;
  __syncthreads();
  float r = red[0];
  for (int w = 1; w < threads / 32; ++w) r = is_max ? fmaxf(r, red[w]) : r + red[w];
  __syncthreads();
  return r;
}

} // namespace

// Outside the anonymous namespace: nvcc's host stub cannot name a kernel there once a
// using-directive for cute is in scope.
__global__ void softmax_cute(const float* x, float* y, int rows, int cols) {
  using namespace cute;
  __shared__ float red[threads / 32];
  Tensor X = make_tensor(make_gmem_ptr(x), make_shape(rows, cols), make_stride(cols, Int<1>{}));
  Tensor Y = make_tensor(make_gmem_ptr(y), make_shape(rows, cols), make_stride(cols, Int<1>{}));
  Tensor xr = X(int(blockIdx.x), _); // this block's row, a rank-1 view
  Tensor yr = Y(int(blockIdx.x), _);
  const int n = size(xr);
  float m = -INFINITY;
  for (int j = threadIdx.x; j < n; j += threads) m = fmaxf(m, xr(j));
  m = block_reduce<true>(m, red);
  float s = 0.f;
  for (int j = threadIdx.x; j < n; j += threads) s += expf(xr(j) - m);
  s = block_reduce<false>(s, red);
  for (int j = threadIdx.x; j < n; j += threads) yr(j) = expf(xr(j) - m) / s;
}

KF_EXPORT int kf_forward(const kf_args* a) {
  if (a->inputs[0].ndim != 2) return 1;
  const int rows = a->inputs[0].shape[0], cols = a->inputs[0].shape[1];
  softmax_cute<<<rows, threads, 0, static_cast<cudaStream_t>(a->stream)>>>(
      static_cast<const float*>(a->inputs[0].data), static_cast<float*>(a->outputs[0].data), rows, cols);
  return cudaGetLastError() == cudaSuccess ? 0 : 2;
}
