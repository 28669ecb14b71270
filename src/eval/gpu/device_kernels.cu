// kforge's own GPU kernels for an evaluation, built at run time like kforge's other kernels
// (build::compile_nvcc; eval/gpu/device_kernels.hpp loads them), so kforge itself needs no
// CUDA compiler. The headers beside this file are hashed into its build's cache key.
//   draw:  inputs drawn where they are used, the values problem::draw gives on the host
//          (counter_rng.h), rounded to the tensor's dtype as the host rounds (dtype_device.h);
//          tests/gpu/draw.cpp compares them with the host draw
//   judge: one pass over a candidate's output against the oracle and the reference, reduced
//          to partial kf_scan records (scan.h) that the host combines; and byte comparisons
//          (repeat calls, inputs unchanged, guards, deferred work) reduced to (count, first)
#include "counter_rng.h"
#include "dtype_device.h"
#include "scan.h"

#include <cuda_runtime.h>

#include <cstdint>

namespace {

template <typename T>
__global__ void draw(kforge::rng::plan p, kforge::rng::key k, T* out, std::uint64_t n) {
  for (std::uint64_t i = blockIdx.x * static_cast<std::uint64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::uint64_t>(gridDim.x) * blockDim.x)
    out[i] = static_cast<T>(kforge::rng::draw_one(p, k, i));
}

} // namespace

/// Enqueues the draw of n values of distribution (kind, a, b) for (seed, stream) into `out`
/// (device memory; doubles, or floats when f32) on `stream`. @return a cudaError_t.
extern "C" __attribute__((visibility("default"))) int kf_draw_device(int kind, double a, double b, std::uint64_t seed,
                                                                     std::uint64_t stream_id, int f32, void* out,
                                                                     std::uint64_t n, void* stream) {
  const auto p = kforge::rng::make_plan(kind, a, b);
  const auto k = kforge::rng::make_key(seed, stream_id);
  int sms = 0;
  cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0);
  const unsigned blocks = static_cast<unsigned>(sms > 0 ? sms * 8 : 1024);
  auto s = static_cast<cudaStream_t>(stream);
  if (f32) draw<float><<<blocks, 256, 0, s>>>(p, k, static_cast<float*>(out), n);
  else draw<double><<<blocks, 256, 0, s>>>(p, k, static_cast<double*>(out), n);
  return static_cast<int>(cudaGetLastError());
}

/// The same into host memory (a device buffer in between): for tests and benchmarks.
/// @param seconds if not null, the draw's own GPU time. @return a cudaError_t.
extern "C" __attribute__((visibility("default"))) int kf_draw_to_host(int kind, double a, double b, std::uint64_t seed,
                                                                      std::uint64_t stream_id, int f32, void* host,
                                                                      std::uint64_t n, double* seconds) {
  void* d = nullptr;
  const std::size_t bytes = n * (f32 ? sizeof(float) : sizeof(double));
  if (auto e = cudaMalloc(&d, bytes); e != cudaSuccess) return e;
  cudaEvent_t t0, t1;
  cudaEventCreate(&t0);
  cudaEventCreate(&t1);
  cudaEventRecord(t0);
  int rc = kf_draw_device(kind, a, b, seed, stream_id, f32, d, n, nullptr);
  cudaEventRecord(t1);
  if (rc == 0) rc = cudaMemcpy(host, d, bytes, cudaMemcpyDeviceToHost);
  float ms = 0;
  cudaEventElapsedTime(&ms, t0, t1);
  if (seconds) *seconds = ms / 1000.0;
  cudaEventDestroy(t0);
  cudaEventDestroy(t1);
  cudaFree(d);
  return rc;
}

namespace {

__global__ void draw_tensor(kforge::rng::plan p, kforge::rng::key k, int dtype, void* out, double* wide,
                            std::uint64_t n) {
  for (std::uint64_t i = blockIdx.x * static_cast<std::uint64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::uint64_t>(gridDim.x) * blockDim.x) {
    double x = kforge::rng::draw_one(p, k, i);
    // Through the tensor's dtype first, as eval::make_inputs does: the oracle sees the candidate's values.
    kforge::gpu::store(out, dtype, i, x);
    if (wide) wide[i] = dtype == kforge::gpu::f64 ? x : kforge::gpu::load(out, dtype, i);
  }
}

__global__ void widen(int dtype, const void* in, double* out, std::uint64_t n) {
  for (std::uint64_t i = blockIdx.x * static_cast<std::uint64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::uint64_t>(gridDim.x) * blockDim.x)
    out[i] = kforge::gpu::load(in, dtype, i);
}

constexpr int scan_threads = 128;

// Block b scans the consecutive range [b * per, (b + 1) * per), each thread its elements in
// ascending order; the block's threads combine in shared memory; one partial per block.
__global__ void scan_output(kf_scan_params p, const void* cand, const void* oracle, const void* ref, std::uint64_t n,
                            std::uint64_t per, kf_scan* partials) {
  __shared__ kf_scan part[scan_threads];
  kf_scan a = kf_scan_empty();
  const std::uint64_t begin = blockIdx.x * per, end = begin + per < n ? begin + per : n;
  const int width = kforge::gpu::dtype_bytes(p.cand_dtype);
  for (std::uint64_t i = begin + threadIdx.x; i < end; i += blockDim.x) {
    bool poison = true;
    const auto* cb = static_cast<const unsigned char*>(cand) + i * width;
    for (int b = 0; b < width; ++b) poison = poison && cb[b] == 0xFF;
    kf_scan_element(a, p, i, poison, kforge::gpu::load(cand, p.cand_dtype, i), kforge::gpu::load(oracle, p.oracle_dtype, i),
                    kforge::gpu::load(ref, p.ref_dtype, i));
  }
  part[threadIdx.x] = a;
  __syncthreads();
  for (int s = blockDim.x / 2; s > 0; s /= 2) {
    if (threadIdx.x < s) kf_scan_combine(part[threadIdx.x], part[threadIdx.x + s]);
    __syncthreads();
  }
  if (threadIdx.x == 0) partials[blockIdx.x] = part[0];
}

// result[0]: how many elements differ; result[1]: the lowest such index (~0 when none).
__global__ void diff_elements(const unsigned char* a, const unsigned char* b, std::uint64_t n, int width,
                              unsigned long long* result) {
  unsigned long long count = 0, first = ~0ull;
  for (std::uint64_t i = blockIdx.x * static_cast<std::uint64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::uint64_t>(gridDim.x) * blockDim.x) {
    bool same = true;
    for (int k = 0; k < width; ++k) same = same && a[i * width + k] == b[i * width + k];
    if (!same) {
      if (count++ == 0) first = i;
    }
  }
  if (count) {
    atomicAdd(&result[0], count);
    atomicMin(&result[1], first);
  }
}

unsigned grid_for(std::uint64_t n) {
  int sms = 0, dev = 0;
  cudaGetDevice(&dev);
  cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev);
  const std::uint64_t most = static_cast<std::uint64_t>(sms > 0 ? sms * 8 : 1024);
  const std::uint64_t need = (n + 255) / 256;
  return static_cast<unsigned>(need < 1 ? 1 : need < most ? need : most);
}

} // namespace

#define KF_DEVICE_API extern "C" __attribute__((visibility("default")))

/// Draws n values of distribution (kind, a, b) for (seed, stream_id) into `out` at `dtype`
/// (a kf_dtype), rounded as the host rounds; when `wide` is not null, the same rounded values
/// as doubles (the oracle's inputs). Enqueued on `stream`. @return a cudaError_t.
KF_DEVICE_API int kf_draw_tensor(int kind, double a, double b, std::uint64_t seed, std::uint64_t stream_id, int dtype,
                                 void* out, double* wide, std::uint64_t n, void* stream) {
  if (n == 0) return 0;
  draw_tensor<<<grid_for(n), 256, 0, static_cast<cudaStream_t>(stream)>>>(
      kforge::rng::make_plan(kind, a, b), kforge::rng::make_key(seed, stream_id), dtype, out, wide, n);
  return static_cast<int>(cudaGetLastError());
}

/// out[i] = in[i] as double, for n elements of `dtype`. @return a cudaError_t.
KF_DEVICE_API int kf_widen(int dtype, const void* in, double* out, std::uint64_t n, void* stream) {
  if (n == 0) return 0;
  widen<<<grid_for(n), 256, 0, static_cast<cudaStream_t>(stream)>>>(dtype, in, out, n);
  return static_cast<int>(cudaGetLastError());
}

/// How many partial records kf_scan_output writes for n elements (its `partials` must hold them).
KF_DEVICE_API std::uint64_t kf_scan_blocks(std::uint64_t n) {
  const std::uint64_t g = grid_for(n);
  return n == 0 ? 0 : g;
}

/// One pass over n elements of a candidate's output against the oracle's and the
/// reference's: kf_scan_blocks(n) partial records into `partials` (device memory), to be
/// combined on the host. @return a cudaError_t.
KF_DEVICE_API int kf_scan_output(const kf_scan_params* p, const void* cand, const void* oracle, const void* ref,
                                 std::uint64_t n, kf_scan* partials, void* stream) {
  if (n == 0) return 0;
  const std::uint64_t blocks = kf_scan_blocks(n), per = (n + blocks - 1) / blocks;
  scan_output<<<static_cast<unsigned>(blocks), scan_threads, 0, static_cast<cudaStream_t>(stream)>>>(
      *p, cand, oracle, ref, n, per, partials);
  return static_cast<int>(cudaGetLastError());
}

/// Compares n elements of `width` bytes of a and b (device memory): result (device memory,
/// two unsigned 64-bit values) receives how many differ and the first that does (~0 when
/// none). @return a cudaError_t.
KF_DEVICE_API int kf_diff(const void* a, const void* b, std::uint64_t n, int width, void* result, void* stream) {
  auto s = static_cast<cudaStream_t>(stream);
  unsigned long long init[2] = {0, ~0ull};
  if (auto e = cudaMemcpyAsync(result, init, sizeof init, cudaMemcpyHostToDevice, s); e != cudaSuccess) return e;
  if (n == 0) return 0;
  diff_elements<<<grid_for(n), 256, 0, s>>>(static_cast<const unsigned char*>(a), static_cast<const unsigned char*>(b), n,
                                            width, static_cast<unsigned long long*>(result));
  return static_cast<int>(cudaGetLastError());
}
