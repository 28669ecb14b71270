// The runtime API's library management (CUDA 12+): a cubin loads without the driver API,
// so kforge keeps linking only the static runtime, which finds the driver at run time.
#include "device/cuda_module.hpp"

#include "core/error.hpp"

#ifdef KFORGE_WITH_CUDA
#include <cuda_runtime_api.h>

namespace kforge::device {

cuda_module::cuda_module(const std::string& image) {
  cudaLibrary_t lib = nullptr;
  const cudaError_t e = cudaLibraryLoadData(&lib, image.data(), nullptr, nullptr, 0, nullptr, nullptr, 0);
  if (e != cudaSuccess)
    KFORGE_THROW(worker, "the cubin does not load: {} ({})", cudaGetErrorString(e), cudaGetErrorName(e));
  m_library = lib;
}

cuda_module::~cuda_module() {
  if (m_library) cudaLibraryUnload(static_cast<cudaLibrary_t>(m_library));
}

cuda_module::kernel_handle cuda_module::kernel(const std::string& lowered_name) const {
  cudaKernel_t k = nullptr;
  const cudaError_t e = cudaLibraryGetKernel(&k, static_cast<cudaLibrary_t>(m_library), lowered_name.c_str());
  if (e != cudaSuccess)
    KFORGE_THROW(worker, "the cubin has no kernel '{}': {}", lowered_name, cudaGetErrorString(e));
  kernel_handle h;
  h.fn = reinterpret_cast<const void*>(k);
  for (std::size_t i = 0;; ++i) {
    std::size_t offset = 0, size = 0;
    if (cudaFuncGetParamInfo(h.fn, i, &offset, &size) != cudaSuccess) break;
    h.param_sizes.push_back(size);
  }
  cudaGetLastError(); // the probe past the last parameter leaves an error behind: clear it
  return h;
}

int cuda_module::launch(kernel_handle& k, const std::array<std::int64_t, 3>& grid,
                        const std::array<std::int64_t, 3>& block, std::int64_t smem, void* stream,
                        std::vector<std::uint64_t>& params, std::string* why) const {
  if (smem > k.dynamic_smem_limit) {
    const cudaError_t e = cudaFuncSetAttribute(k.fn, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(smem));
    if (e != cudaSuccess) {
      cudaGetLastError();
      *why = fmt::format("{} bytes of dynamic shared memory: {}", smem, cudaGetErrorString(e));
      return static_cast<int>(e);
    }
    k.dynamic_smem_limit = smem;
  }
  std::vector<void*> ptrs(params.size());
  for (std::size_t i = 0; i < params.size(); ++i) ptrs[i] = &params[i];
  const dim3 g(static_cast<unsigned>(grid[0]), static_cast<unsigned>(grid[1]), static_cast<unsigned>(grid[2]));
  const dim3 b(static_cast<unsigned>(block[0]), static_cast<unsigned>(block[1]), static_cast<unsigned>(block[2]));
  const cudaError_t e =
      cudaLaunchKernel(k.fn, g, b, ptrs.data(), static_cast<std::size_t>(smem), static_cast<cudaStream_t>(stream));
  if (e != cudaSuccess) {
    *why = fmt::format("cudaLaunchKernel: {} ({})", cudaGetErrorString(e), cudaGetErrorName(e));
    return static_cast<int>(e);
  }
  return 0;
}

} // namespace kforge::device

#else

namespace kforge::device {
cuda_module::cuda_module(const std::string&) {
  KFORGE_THROW(worker, "kernel-only (cubin) candidates need the CUDA backend; this kforge was built without CUDA");
}
cuda_module::~cuda_module() = default;
cuda_module::kernel_handle cuda_module::kernel(const std::string&) const { return {}; }
int cuda_module::launch(kernel_handle&, const std::array<std::int64_t, 3>&, const std::array<std::int64_t, 3>&,
                        std::int64_t, void*, std::vector<std::uint64_t>&, std::string*) const {
  return 1;
}
} // namespace kforge::device

#endif
