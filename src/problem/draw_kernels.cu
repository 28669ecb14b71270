// kforge's inputs drawn on the GPU: the values problem::draw gives on the host, element by
// element (counter_rng.h, beside this file so that the build cache hashes it), written as
// double or float. Built at run time like kforge's other kernels (build::compile_nvcc), so
// kforge itself needs no CUDA compiler. The first step of drawing inputs where they are used
// (issue 18); tests/gpu/draw.cpp compares it with the host draw.
#include "counter_rng.h"

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
