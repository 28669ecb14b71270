#pragma once
// GPU memory one process allocates and another maps, by file descriptor: the CUDA VMM API
// (cuMemCreate with POSIX-fd handles, cuMemExportToShareableHandle / cuMemImportFromShareableHandle).
// The evaluation's trusted judge allocates the inputs and outputs a candidate may touch and
// sends their fds (core/fd_passing.hpp); the candidate's worker maps exactly those. Unlike
// legacy cudaIpc handles, an fd works between sibling PID namespaces (two confined workers)
// and cannot be guessed. Driver entry points are found through the runtime, so kforge links
// no libcuda. Built with the CUDA backend (KFORGE_WITH_CUDA); elsewhere every call says why not.
//   auto m = shared_memory::allocate(0, bytes);   int fd = m.export_fd();   // judge
//   auto v = shared_memory::import(0, fd, m.size());  v.data() ...           // worker
#include <cstddef>
#include <string>

namespace kforge::device {

/// Empty when device `ordinal` can share memory by fd (VMM with POSIX-fd handles), else why
/// not (no CUDA in this build, an old driver, a device without VMM). Initialises the device.
[[nodiscard]] std::string sharing_unavailable(int ordinal);

class shared_memory {
public:
  /// At least `bytes` of device memory on `ordinal` (rounded up to the allocation
  /// granularity), mapped read-write in this process and exportable.
  /// @throws kforge::error (worker) with the driver's reason
  [[nodiscard]] static shared_memory allocate(int ordinal, std::size_t bytes);
  /// Maps an allocation of `bytes` (its size() in the exporter) from its fd, read-write.
  /// The fd is not kept: the caller closes it. @throws kforge::error (worker)
  [[nodiscard]] static shared_memory import(int ordinal, int fd, std::size_t bytes);

  shared_memory() = default;
  shared_memory(shared_memory&& o) noexcept { swap(o); }
  shared_memory& operator=(shared_memory&& o) noexcept {
    swap(o);
    return *this;
  }
  shared_memory(const shared_memory&) = delete;
  shared_memory& operator=(const shared_memory&) = delete;
  ~shared_memory();

  [[nodiscard]] void* data() const { return reinterpret_cast<void*>(m_ptr); }
  [[nodiscard]] std::size_t size() const { return m_size; }
  /// A new fd for this allocation (the caller closes it). @throws kforge::error (worker)
  [[nodiscard]] int export_fd() const;

private:
  void swap(shared_memory& o) noexcept;
  unsigned long long m_handle = 0; // CUmemGenericAllocationHandle
  unsigned long long m_ptr = 0;    // CUdeviceptr
  std::size_t m_size = 0;
  int m_ordinal = 0;
};

} // namespace kforge::device
