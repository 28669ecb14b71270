#include "device/backend.hpp"

#include "core/error.hpp"
#include "device/cpu_backend.hpp"
#include "device/cuda_backend.hpp"

namespace kforge::device {

std::unique_ptr<backend> make_backend(problem::backend_kind kind) {
  switch (kind) {
  case problem::backend_kind::cpu: return make_cpu_backend();
  case problem::backend_kind::cuda:
#ifdef KFORGE_WITH_CUDA
    return make_cuda_backend(0);
#else
    KFORGE_THROW(usage, "this kforge was built without the CUDA toolkit; rebuild where nvcc is installed");
#endif
  }
  KFORGE_THROW(internal, "unknown backend");
}

} // namespace kforge::device
