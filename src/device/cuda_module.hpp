#pragma once
// Loads a cubin into the current CUDA context and launches its kernels by handle: the host
// side of kernel-only (NVRTC) candidates, which bring no host code of their own.
//   device::cuda_module m(read_file("kernel.cubin"));
//   auto k = m.kernel("_Z7softmaxILi256EEvPKfPfx");      // k.param_sizes = {8, 8, 8}
//   std::string why; int rc = m.launch(k, grid, block, smem, stream, params, &why);
#include <array>
#include <cstdint>
#include <string>
#include <vector>

namespace kforge::device {

class cuda_module {
public:
  /// @throws kforge::error (worker) when the image does not load (wrong architecture, not a cubin).
  explicit cuda_module(const std::string& image);
  ~cuda_module();
  cuda_module(const cuda_module&) = delete;
  cuda_module& operator=(const cuda_module&) = delete;

  struct kernel_handle {
    const void* fn = nullptr;           // a cudaKernel_t, usable where the runtime takes a kernel
    std::vector<std::size_t> param_sizes; // bytes of each parameter, in order
    std::int64_t dynamic_smem_limit = 48 * 1024; // raised on demand up to the device's opt-in maximum
  };
  /// @throws kforge::error (worker) when the cubin has no kernel of that (mangled) name.
  [[nodiscard]] kernel_handle kernel(const std::string& lowered_name) const;
  /// Enqueues one launch on `stream`. params holds one 8-byte value per parameter; a 4-byte
  /// parameter takes the low half. @return 0, or a CUDA error code with *why set.
  int launch(kernel_handle& k, const std::array<std::int64_t, 3>& grid, const std::array<std::int64_t, 3>& block,
             std::int64_t smem, void* stream, std::vector<std::uint64_t>& params, std::string* why) const;

private:
  void* m_library = nullptr; // cudaLibrary_t
};

} // namespace kforge::device
