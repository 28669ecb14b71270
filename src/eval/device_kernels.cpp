#include "eval/device_kernels.hpp"

#include "core/error.hpp"
#include "core/fs.hpp"

#include <dlfcn.h>

namespace kforge::eval {

build::artifact build_device_kernels() {
  return build::compile_nvcc({.source = data_path("src/eval/gpu/device_kernels.cu"), .role = "kforge"});
}

device_kernels load_device_kernels(const std::filesystem::path& library) {
  // Never unloaded: the kernels live as long as the process.
  void* h = ::dlopen(library.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!h) KFORGE_THROW(worker, "kforge's device kernels: {}", ::dlerror());
  device_kernels k;
  auto find = [&](auto& fn, const char* name) {
    void* p = ::dlsym(h, name);
    if (!p) KFORGE_THROW(worker, "kforge's device kernels ({}) have no {}", library.string(), name);
    fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(p);
  };
  find(k.draw_tensor, "kf_draw_tensor");
  find(k.widen, "kf_widen");
  find(k.scan_blocks, "kf_scan_blocks");
  find(k.scan_output, "kf_scan_output");
  find(k.diff, "kf_diff");
  return k;
}

} // namespace kforge::eval
