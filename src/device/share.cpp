#include "device/share.hpp"

#include "core/error.hpp"

#include <utility>

#ifdef KFORGE_WITH_CUDA
#include <cuda.h>
#include <cuda_runtime.h>

#include <mutex>
#endif

namespace kforge::device {

#ifdef KFORGE_WITH_CUDA
namespace {

// The driver calls used here, from cudaGetDriverEntryPointByVersion: kforge links the
// static runtime only, and the driver is whatever the machine has.
struct driver {
  CUresult (*mem_get_granularity)(size_t*, const CUmemAllocationProp*, CUmemAllocationGranularity_flags) = nullptr;
  CUresult (*mem_create)(CUmemGenericAllocationHandle*, size_t, const CUmemAllocationProp*, unsigned long long) = nullptr;
  CUresult (*mem_release)(CUmemGenericAllocationHandle) = nullptr;
  CUresult (*mem_address_reserve)(CUdeviceptr*, size_t, size_t, CUdeviceptr, unsigned long long) = nullptr;
  CUresult (*mem_address_free)(CUdeviceptr, size_t) = nullptr;
  CUresult (*mem_map)(CUdeviceptr, size_t, size_t, CUmemGenericAllocationHandle, unsigned long long) = nullptr;
  CUresult (*mem_unmap)(CUdeviceptr, size_t) = nullptr;
  CUresult (*mem_set_access)(CUdeviceptr, size_t, const CUmemAccessDesc*, size_t) = nullptr;
  CUresult (*mem_export)(void*, CUmemGenericAllocationHandle, CUmemAllocationHandleType, unsigned long long) = nullptr;
  CUresult (*mem_import)(CUmemGenericAllocationHandle*, void*, CUmemAllocationHandleType) = nullptr;
  CUresult (*get_error_string)(CUresult, const char**) = nullptr;
  CUresult (*device_get_attribute)(int*, CUdevice_attribute, CUdevice) = nullptr;
  std::string missing;
};

template <class F> void find(F& fn, const char* name, std::string& missing) {
  void* p = nullptr;
  cudaDriverEntryPointQueryResult q{};
  if (cudaGetDriverEntryPointByVersion(name, &p, 12000, cudaEnableDefault, &q) != cudaSuccess ||
      q != cudaDriverEntryPointSuccess || !p) {
    if (missing.empty()) missing = name;
    return;
  }
  fn = reinterpret_cast<F>(p);
}

const driver& api() {
  static driver d;
  static std::once_flag once;
  std::call_once(once, [] {
    find(d.mem_get_granularity, "cuMemGetAllocationGranularity", d.missing);
    find(d.mem_create, "cuMemCreate", d.missing);
    find(d.mem_release, "cuMemRelease", d.missing);
    find(d.mem_address_reserve, "cuMemAddressReserve", d.missing);
    find(d.mem_address_free, "cuMemAddressFree", d.missing);
    find(d.mem_map, "cuMemMap", d.missing);
    find(d.mem_unmap, "cuMemUnmap", d.missing);
    find(d.mem_set_access, "cuMemSetAccess", d.missing);
    find(d.mem_export, "cuMemExportToShareableHandle", d.missing);
    find(d.mem_import, "cuMemImportFromShareableHandle", d.missing);
    find(d.get_error_string, "cuGetErrorString", d.missing);
    find(d.device_get_attribute, "cuDeviceGetAttribute", d.missing);
  });
  return d;
}

std::string why(CUresult r) {
  const char* s = nullptr;
  if (api().get_error_string) api().get_error_string(r, &s);
  return s ? s : "CUDA driver error " + std::to_string(static_cast<int>(r));
}

#define KF_DRV(call, what)                                                                                         \
  do {                                                                                                             \
    if (CUresult r_ = (call); r_ != CUDA_SUCCESS) KFORGE_THROW(worker, "{}: {}", what, why(r_));                   \
  } while (0)

CUmemAllocationProp props(int ordinal) {
  CUmemAllocationProp p{};
  p.type = CU_MEM_ALLOCATION_TYPE_PINNED;
  p.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  p.location.id = ordinal;
  p.requestedHandleTypes = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
  return p;
}

void ready(int ordinal) {
  if (auto e = cudaSetDevice(ordinal); e != cudaSuccess)
    KFORGE_THROW(worker, "cuda:{}: {}", ordinal, cudaGetErrorString(e));
  if (auto e = cudaFree(nullptr); e != cudaSuccess) // the primary context, current for the driver calls
    KFORGE_THROW(worker, "cuda:{}: {}", ordinal, cudaGetErrorString(e));
  if (!api().missing.empty()) KFORGE_THROW(worker, "the CUDA driver has no {}", api().missing);
}

std::size_t granularity(int ordinal) {
  const auto p = props(ordinal);
  std::size_t g = 0;
  KF_DRV(api().mem_get_granularity(&g, &p, CU_MEM_ALLOC_GRANULARITY_MINIMUM), "cuMemGetAllocationGranularity");
  return g ? g : 2u << 20;
}

// Reserves an address range for `handle`, maps it and makes it read-write on the device.
CUdeviceptr map(int ordinal, CUmemGenericAllocationHandle handle, std::size_t size) {
  CUdeviceptr ptr = 0;
  KF_DRV(api().mem_address_reserve(&ptr, size, 0, 0, 0), "cuMemAddressReserve");
  if (CUresult r = api().mem_map(ptr, size, 0, handle, 0); r != CUDA_SUCCESS) {
    api().mem_address_free(ptr, size);
    KFORGE_THROW(worker, "cuMemMap: {}", why(r));
  }
  CUmemAccessDesc access{};
  access.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  access.location.id = ordinal;
  access.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
  if (CUresult r = api().mem_set_access(ptr, size, &access, 1); r != CUDA_SUCCESS) {
    api().mem_unmap(ptr, size);
    api().mem_address_free(ptr, size);
    KFORGE_THROW(worker, "cuMemSetAccess: {}", why(r));
  }
  return ptr;
}

} // namespace

std::string sharing_unavailable(int ordinal) {
  try {
    ready(ordinal);
    int vmm = 0, fd_handles = 0;
    KF_DRV(api().device_get_attribute(&vmm, CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED, ordinal),
           "cuDeviceGetAttribute");
    KF_DRV(api().device_get_attribute(&fd_handles, CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR_SUPPORTED,
                                      ordinal),
           "cuDeviceGetAttribute");
    if (!vmm) return "the device does not support CUDA virtual memory management";
    if (!fd_handles) return "the device does not support POSIX file descriptor handles";
    return "";
  } catch (const error& e) {
    return e.what();
  }
}

shared_memory shared_memory::allocate(int ordinal, std::size_t bytes) {
  ready(ordinal);
  const std::size_t g = granularity(ordinal);
  shared_memory m;
  m.m_ordinal = ordinal;
  m.m_size = (std::max<std::size_t>(bytes, 1) + g - 1) / g * g;
  const auto p = props(ordinal);
  CUmemGenericAllocationHandle h = 0;
  KF_DRV(api().mem_create(&h, m.m_size, &p, 0), fmt::format("cuMemCreate of {} bytes", m.m_size));
  m.m_handle = h;
  m.m_ptr = map(ordinal, h, m.m_size);
  return m;
}

shared_memory shared_memory::import(int ordinal, int fd, std::size_t bytes) {
  ready(ordinal);
  shared_memory m;
  m.m_ordinal = ordinal;
  m.m_size = bytes;
  CUmemGenericAllocationHandle h = 0;
  KF_DRV(api().mem_import(&h, reinterpret_cast<void*>(static_cast<std::intptr_t>(fd)),
                          CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR),
         "cuMemImportFromShareableHandle");
  m.m_handle = h;
  m.m_ptr = map(ordinal, h, bytes);
  return m;
}

int shared_memory::export_fd() const {
  int fd = -1;
  KF_DRV(api().mem_export(&fd, m_handle, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0), "cuMemExportToShareableHandle");
  return fd;
}

shared_memory::~shared_memory() {
  if (!m_handle) return;
  if (m_ptr) {
    api().mem_unmap(m_ptr, m_size);
    api().mem_address_free(m_ptr, m_size);
  }
  api().mem_release(m_handle);
}

#else // no CUDA in this build

std::string sharing_unavailable(int) { return "this kforge was built without CUDA"; }
shared_memory shared_memory::allocate(int, std::size_t) { KFORGE_THROW(worker, "{}", sharing_unavailable(0)); }
shared_memory shared_memory::import(int, int, std::size_t) { KFORGE_THROW(worker, "{}", sharing_unavailable(0)); }
int shared_memory::export_fd() const { KFORGE_THROW(worker, "{}", sharing_unavailable(0)); }
shared_memory::~shared_memory() = default;

#endif

void shared_memory::swap(shared_memory& o) noexcept {
  std::swap(m_handle, o.m_handle);
  std::swap(m_ptr, o.m_ptr);
  std::swap(m_size, o.m_size);
  std::swap(m_ordinal, o.m_ordinal);
}

} // namespace kforge::device
