#include "device/backend.hpp"

#include "core/error.hpp"
#include "device/cpu_backend.hpp"
#include "device/cuda_backend.hpp"

#include <map>
#include <mutex>

namespace kforge::device {

std::unique_ptr<backend> make_backend(problem::backend_kind kind, int ordinal) {
  switch (kind) {
  case problem::backend_kind::cpu: return make_cpu_backend();
  case problem::backend_kind::cuda:
#ifdef KFORGE_WITH_CUDA
    return make_cuda_backend(ordinal);
#else
    (void)ordinal;
    KFORGE_THROW(usage, "this kforge was built without the CUDA toolkit; rebuild where nvcc is installed");
#endif
  }
  KFORGE_THROW(internal, "unknown backend");
}

int device_count(problem::backend_kind kind) {
  if (kind == problem::backend_kind::cpu) return 1;
#ifdef KFORGE_WITH_CUDA
  return cuda_device_count();
#else
  return 0;
#endif
}

std::string device_model(problem::backend_kind kind, int ordinal) {
  static std::mutex mu;
  static std::map<std::pair<int, int>, std::string> cache;
  std::lock_guard lock(mu);
  const std::pair key{static_cast<int>(kind), ordinal};
  if (auto it = cache.find(key); it != cache.end()) return it->second;
  std::string d;
  if (kind == problem::backend_kind::cpu) {
    d = make_cpu_backend()->description();
  } else {
#ifdef KFORGE_WITH_CUDA
    d = cuda_device_description(ordinal);
#else
    KFORGE_THROW(usage, "this kforge was built without the CUDA toolkit; rebuild where nvcc is installed");
#endif
  }
  return cache[key] = d;
}

std::string describe_device(problem::backend_kind kind, int ordinal) {
  const std::string name = kind == problem::backend_kind::cpu ? "cpu" : "cuda:" + std::to_string(ordinal);
  return name + ": " + device_model(kind, ordinal);
}

} // namespace kforge::device
