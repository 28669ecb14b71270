#pragma once
// What the evaluator needs from a device: memory, copies, a stream, a clock, a cache
// flush. The CPU backend implements it with host memory and the steady clock; the
// CUDA backend implements the same calls with cudaMalloc, a per-evaluation stream and
// CUDA events, so nothing above this layer knows which one it drives.
//   auto dev = device::make_backend(problem::backend_kind::cpu);
//   void* p = dev->allocate(n);  dev->upload(p, host, n);  double s = dev->time_call(fn, &rc);
#include "problem/problem.hpp"

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>

namespace kforge::device {

struct memory_region {
  const void* data;
  std::size_t bytes;
};

class backend {
public:
  virtual ~backend() = default;

  /// @return short name, e.g. "cpu" or "cuda:0".
  [[nodiscard]] virtual std::string name() const = 0;
  /// @return the device model as the report should show it (CPU model, GPU name).
  [[nodiscard]] virtual std::string description() const = 0;

  /// Device memory, 256-byte aligned, uninitialised. @throws kforge::error on exhaustion.
  [[nodiscard]] virtual void* allocate(std::size_t bytes) = 0;
  virtual void release(void* p) noexcept = 0;
  virtual void upload(void* dst, const void* src, std::size_t bytes) = 0;   // host -> device
  virtual void download(void* dst, const void* src, std::size_t bytes) = 0; // device -> host
  virtual void fill(void* dst, std::uint8_t byte, std::size_t bytes) = 0;
  /// Device to device, enqueued on stream() after what is there (CPU: at once).
  virtual void copy(void* dst, const void* src, std::size_t bytes) = 0;

  /// @return what kf_args.stream carries: NULL on the CPU, the cudaStream_t on CUDA.
  [[nodiscard]] virtual void* stream() = 0;
  /// Waits for all work on the device. @throws kforge::error on a device fault.
  virtual void synchronize() = 0;
  /// Waits only for the work enqueued on stream() (CPU: nothing to wait for). What a call
  /// leaves running elsewhere (another stream, a thread) is still running after this.
  virtual void synchronize_stream() = 0;
  /// Makes the next call cold: evicts what it will touch from the caches. The CPU
  /// backend evicts exactly `touched` line by line from every level; a GPU backend
  /// scrubs its whole L2, whatever `touched` says.
  virtual void flush_caches(std::span<const memory_region> touched) = 0;
  /// Runs fn once and returns its duration in seconds on this backend's clock, after
  /// the work it enqueued is complete. *rc receives fn's return value.
  [[nodiscard]] virtual double time_call(const std::function<int()>& fn, int* rc) = 0;
  /// Marks where a profiler attached to this process collects (cudaProfilerStart/Stop
  /// under `ncu --profile-from-start off`), so the harness's own kernels stay out of a
  /// profile. No-op on the CPU.
  virtual void profiler_range(bool collect) { (void)collect; }
};

/// @param ordinal which device of the kind (CUDA: the device index; the CPU has one)
/// @throws kforge::error (usage) when the backend is not available in this build or on this machine.
[[nodiscard]] std::unique_ptr<backend> make_backend(problem::backend_kind kind, int ordinal = 0);

/// How many devices of the kind this machine has (CPU: 1; CUDA: 0 when none is visible).
[[nodiscard]] int device_count(problem::backend_kind kind);

/// "name: description" of a device (e.g. "cuda:1: NVIDIA H200 (sm_90, ...)"), read once per
/// process and cached: it needs no stream, buffers or timer, so the parent of the workers
/// does not hold a context's worth of memory on every GPU it schedules.
/// @throws kforge::error (usage) as make_backend.
[[nodiscard]] std::string describe_device(problem::backend_kind kind, int ordinal = 0);
/// The description part alone (the key of the calibration cache).
[[nodiscard]] std::string device_model(problem::backend_kind kind, int ordinal = 0);

} // namespace kforge::device
