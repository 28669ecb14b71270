// Device ceilings for kforge calibrate, built by nvcc at run time like any kernel and
// run inside a worker: copy bandwidth (device-to-device, bytes read + written) and
// dense GEMM rates through cuBLAS (fp32, tf32, bf16 with fp32 accumulation, fp64),
// each on random data, median of timed repetitions after warm-up.
#include <cublas_v2.h>
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <vector>

namespace {

__global__ void fill_random(unsigned char* p, size_t n, int elem_bytes, int kind) {
  for (size_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += size_t(gridDim.x) * blockDim.x) {
    uint64_t h = i * 0x9e3779b97f4a7c15ull;
    h ^= h >> 31;
    h *= 0xbf58476d1ce4e5b9ull;
    h ^= h >> 29;
    const float u = float(h >> 40) / float(1ull << 24) - 0.5f;
    if (kind == 0) reinterpret_cast<float*>(p)[i] = u;
    else if (kind == 1) reinterpret_cast<double*>(p)[i] = u;
    else reinterpret_cast<__nv_bfloat16*>(p)[i] = __float2bfloat16(u);
    (void)elem_bytes;
  }
}

template <class F>
double median_seconds(F&& f, int reps) {
  cudaEvent_t a, b;
  cudaEventCreate(&a);
  cudaEventCreate(&b);
  for (int i = 0; i < 3; ++i) f();
  std::vector<double> t;
  for (int i = 0; i < reps; ++i) {
    cudaEventRecord(a);
    f();
    cudaEventRecord(b);
    cudaEventSynchronize(b);
    float ms = 0;
    cudaEventElapsedTime(&ms, a, b);
    t.push_back(ms * 1e-3);
  }
  cudaEventDestroy(a);
  cudaEventDestroy(b);
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

} // namespace

// out: [0] copy bytes/s, [1] fp32 FLOP/s, [2] tf32, [3] bf16, [4] fp64. @return 0 on success.
extern "C" __attribute__((visibility("default"))) int kf_calibrate(double* out, int n) {
  if (n < 5) return 1;
  const size_t copy_bytes = size_t(4) << 30;
  void *src = nullptr, *dst = nullptr;
  if (cudaMalloc(&src, copy_bytes) || cudaMalloc(&dst, copy_bytes)) return 2;
  fill_random<<<1024, 256>>>(static_cast<unsigned char*>(src), copy_bytes / 4, 4, 0);
  const double tc = median_seconds([&] { cudaMemcpyAsync(dst, src, copy_bytes, cudaMemcpyDeviceToDevice); }, 20);
  out[0] = 2.0 * copy_bytes / tc;
  cudaFree(src);
  cudaFree(dst);

  cublasHandle_t h;
  if (cublasCreate(&h) != CUBLAS_STATUS_SUCCESS) return 3;
  const int m = 8192;
  const size_t elems = size_t(m) * m;
  void *A, *B, *C;
  if (cudaMalloc(&A, elems * 8) || cudaMalloc(&B, elems * 8) || cudaMalloc(&C, elems * 8)) return 4;
  const double flops = 2.0 * double(m) * m * m;
  const float one = 1.f, zero = 0.f;
  const double oned = 1.0, zerod = 0.0;
  struct cfg { cudaDataType in; cublasComputeType_t compute; int kind; };
  const cfg cfgs[4] = {{CUDA_R_32F, CUBLAS_COMPUTE_32F_PEDANTIC, 0},
                       {CUDA_R_32F, CUBLAS_COMPUTE_32F_FAST_TF32, 0},
                       {CUDA_R_16BF, CUBLAS_COMPUTE_32F, 2},
                       {CUDA_R_64F, CUBLAS_COMPUTE_64F, 1}};
  for (int k = 0; k < 4; ++k) {
    const auto& c = cfgs[k];
    fill_random<<<1024, 256>>>(static_cast<unsigned char*>(A), elems, 0, c.kind);
    fill_random<<<1024, 256>>>(static_cast<unsigned char*>(B), elems, 0, c.kind);
    const cudaDataType out_t = c.kind == 2 ? CUDA_R_32F : c.in;
    const void* alpha = c.kind == 1 ? static_cast<const void*>(&oned) : static_cast<const void*>(&one);
    const void* beta = c.kind == 1 ? static_cast<const void*>(&zerod) : static_cast<const void*>(&zero);
    cublasStatus_t st = CUBLAS_STATUS_SUCCESS;
    const double t = median_seconds(
        [&] {
          st = cublasGemmEx(h, CUBLAS_OP_N, CUBLAS_OP_N, m, m, m, alpha, A, c.in, m, B, c.in, m, beta, C, out_t, m,
                            c.compute, CUBLAS_GEMM_DEFAULT);
        },
        k == 3 ? 5 : 10);
    if (st != CUBLAS_STATUS_SUCCESS) return 10 + k;
    out[1 + k] = flops / t;
  }
  cublasDestroy(h);
  cudaFree(A);
  cudaFree(B);
  cudaFree(C);
  return cudaDeviceSynchronize() == cudaSuccess ? 0 : 5;
}
