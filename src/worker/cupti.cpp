#include "worker/cupti.hpp"

#include <fmt/format.h>

#include <dlfcn.h>

namespace kforge::worker {

void* load_cupti(std::string* why_not) {
  for (const char* name : {"libcupti.so.13", "libcupti.so", "/usr/local/cuda/extras/CUPTI/lib64/libcupti.so",
                           "/usr/local/cuda/lib64/libcupti.so"})
    if (void* lib = ::dlopen(name, RTLD_NOW | RTLD_LOCAL)) return lib;
  *why_not = fmt::format("libcupti could not be loaded ({})", ::dlerror());
  return nullptr;
}

} // namespace kforge::worker
