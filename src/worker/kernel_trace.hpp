#pragma once
// What a call really ran (docs/candidates.md, "What ran"): CUPTI's kernel activity records for
// a few calls of a subject, by kernel: name, launches and GPU time per call, and whether it is a
// vendor library's kernel (cuBLAS, cuDNN, CUTLASS, PyTorch's own ATen kernels), so a reader
// sees whether a "custom kernel" is custom or a call back into the library the reference uses.
// Taken after timing, outside every timed call (tracing costs per launch). Like launch_guard,
// in the subject's process: it describes an honest candidate, it is not a defence.
//   std::string why;  auto t = kernel_trace::start(&why);
//   for (...) kf_forward(&args);  dev.synchronize();
//   nlohmann::json kernels = t->finish(calls);  // [{name, launches, gpu_s, library}, ...]
#include <nlohmann/json.hpp>

#include <memory>
#include <string>
#include <vector>

namespace kforge::worker {

struct kernel_record {
  std::string name; // demangled where it is C++
  double gpu_s = 0;
};

/// Which vendor library a kernel's name says it comes from ("cuBLAS", "CUTLASS", "cuDNN",
/// "ATen" (PyTorch's own kernels), ...), or "" for one that names none.
[[nodiscard]] std::string library_of(const std::string& kernel_name);

/// Records grouped by name, per call: [{name, launches, gpu_s, library}], the most GPU time first.
[[nodiscard]] nlohmann::json summarize_kernels(const std::vector<kernel_record>& records, int calls);

class kernel_trace {
public:
  /// @return nullptr with *why_not set when CUPTI's activity API is not available here
  [[nodiscard]] static std::unique_ptr<kernel_trace> start(std::string* why_not);
  ~kernel_trace();
  kernel_trace(const kernel_trace&) = delete;
  kernel_trace& operator=(const kernel_trace&) = delete;
  /// Flushes and stops the trace (the device must be synchronized first).
  /// @return summarize_kernels of what ran since start, over `calls` calls
  [[nodiscard]] nlohmann::json finish(int calls);

private:
  kernel_trace() = default;
  bool m_on = false;
};

} // namespace kforge::worker
