#pragma once
// A loaded implementation, whatever built it: a shared object exporting kf_forward (host
// and nvcc builds), or a cubin with its launch plan (kernel-only candidates built by
// NVRTC), which this module launches itself through the same kf_forward signature.
//   auto k = worker::load_kernel(path, problem);        // variant: kernel_library or reason
//   int rc = k.forward(&args);  if (rc) log(k.last_error());
#include "problem/problem.hpp"

#include <kforge/kernel.h>

#include <functional>
#include <memory>
#include <string>
#include <variant>

namespace kforge::worker {

struct kernel_library {
  std::function<int(const kf_args*)> forward;
  std::function<std::size_t(const kf_args*)> workspace; // empty when the implementation needs none
  /// Why the last forward() returned non-zero, where the implementation can say (cubins).
  std::function<std::string()> last_error = [] { return std::string(); };
  std::shared_ptr<void> keep_alive; // the dlopen handle or the loaded module
};

/// @return the loaded implementation, or the reason it could not be loaded.
[[nodiscard]] std::variant<kernel_library, std::string> load_kernel(const std::string& path,
                                                                    const problem::problem& p);

} // namespace kforge::worker
