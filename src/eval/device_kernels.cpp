#include "eval/device_kernels.hpp"

#include "core/error.hpp"
#include "core/fs.hpp"

#include <dlfcn.h>

namespace kforge::eval {

build::artifact build_device_kernels() {
  return build::compile_nvcc({.source = data_path("src/eval/gpu/device_kernels.cu"), .role = "kforge"});
}

void draw_case(const device_kernels& k, const problem::problem& p, const problem::case_spec& c, std::uint64_t seed,
               const std::vector<void*>& dst, void* stream) {
  const auto ins = p.inputs();
  for (std::size_t i = 0; i < ins.size(); ++i) {
    const auto& d = c.inputs.at(ins[i]->name);
    // The input's place in the problem is its stream of the generator, as on the host.
    if (int e = k.draw_tensor(static_cast<int>(d.kind), d.a, d.b, seed, i, ins[i]->dtype, dst[i], nullptr,
                              static_cast<std::uint64_t>(ins[i]->numel()), stream);
        e != 0)
      KFORGE_THROW(worker, "drawing input '{}' on the device failed (CUDA error {})", ins[i]->name, e);
  }
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
