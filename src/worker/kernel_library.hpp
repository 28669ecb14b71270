#pragma once
// A loaded implementation, whatever built it: a shared object exporting kf_forward (host
// and nvcc builds), or a cubin with its launch plan (kernel-only candidates built by
// NVRTC), which this module launches itself through the same kf_forward signature.
//   auto k = worker::load_kernel(path, problem);        // variant: kernel_library or reason
//   int rc = k.forward(&args);  if (rc) log(k.last_error());
#include "device/backend.hpp"
#include "problem/problem.hpp"

#include <kforge/kernel.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <variant>
#include <vector>

namespace kforge::worker {

struct kernel_library {
  std::function<int(const kf_args*)> forward;
  std::function<std::size_t(const kf_args*)> workspace; // empty when the implementation needs none
  /// Set where a call may leave its outputs in the implementation's own memory (a Python
  /// candidate returns new tensors): unplaced() is the call alone, place(rc) then copies what
  /// it returned into the args' outputs (on the device's stream) and returns the call's rc, or
  /// non-zero when what it returned does not fit. forward() is the two back to back. A timed
  /// call runs place() after the timer stopped (worker::time_forward): kforge's copy is not the
  /// candidate's time. From unplaced() to place() none of the candidate's Python runs (the
  /// interpreter's lock stays held), so no thread of it can add work the timer did not see.
  std::function<int(const kf_args*)> unplaced;
  std::function<int(int rc)> place;
  /// Why the last forward() returned non-zero, where the implementation can say (cubins).
  std::function<std::string()> last_error = [] { return std::string(); };
  std::shared_ptr<void> keep_alive; // the dlopen handle or the loaded module
  /// What loading took, step by step, where it is worth saying (a Python candidate: the
  /// interpreter, import torch, the candidate's module), for phases.steps.
  struct load_step {
    std::string name;
    std::int64_t begin_ns, end_ns; // std::chrono::steady_clock, which every process of the machine shares
  };
  std::vector<load_step> load_steps;
};

/// @param dev where the calls run (a Python candidate's outputs are copied with dev.copy)
/// @return the loaded implementation, or the reason it could not be loaded.
[[nodiscard]] std::variant<kernel_library, std::string> load_kernel(const std::string& path,
                                                                    const problem::problem& p, device::backend& dev);

} // namespace kforge::worker
