#pragma once
// kforge's own GPU kernels (eval/gpu/device_kernels.cu): built at run time by nvcc through
// the build cache, like candidates, and loaded by the processes that draw inputs and judge
// outputs on the device. The parent builds them (build_device_kernels); workers load the
// library it names in their job (load_device_kernels), so no worker runs a compiler.
//   auto a = eval::build_device_kernels();            // parent; cached after the first time
//   auto k = eval::load_device_kernels(a.library);    // worker
//   k.draw_tensor(kind, a, b, seed, stream, dtype, dst, nullptr, n, stream_ptr);
#include "build/compiler.hpp"
#include "eval/gpu/scan.h"
#include "problem/problem.hpp"

#include <cstdint>
#include <filesystem>
#include <vector>

namespace kforge::eval {

struct device_kernels {
  int (*draw_tensor)(int kind, double a, double b, std::uint64_t seed, std::uint64_t stream_id, int dtype, void* out,
                     double* wide, std::uint64_t n, void* stream) = nullptr;
  int (*widen)(int dtype, const void* in, double* out, std::uint64_t n, void* stream) = nullptr;
  std::uint64_t (*scan_blocks)(std::uint64_t n) = nullptr;
  int (*scan_output)(const kf_scan_params* p, const void* cand, const void* oracle, const void* ref, std::uint64_t n,
                     kf_scan* partials, void* stream) = nullptr;
  int (*diff)(const void* a, const void* b, std::uint64_t n, int width, void* result, void* stream) = nullptr;
};

/// Case `c`'s inputs for `seed` into `dst` (device memory, each input at the problem's dtype),
/// the values eval::make_inputs draws on the host, enqueued on `stream`.
/// @throws kforge::error (worker) when a draw cannot be launched
void draw_case(const device_kernels& k, const problem::problem& p, const problem::case_spec& c, std::uint64_t seed,
               const std::vector<void*>& dst, void* stream);

/// Compiles eval/gpu/device_kernels.cu (found by core/fs data_path) for the GPU's architecture.
[[nodiscard]] build::artifact build_device_kernels();
/// @throws kforge::error (worker) when the library cannot be loaded or lacks a kernel
[[nodiscard]] device_kernels load_device_kernels(const std::filesystem::path& library);

} // namespace kforge::eval
