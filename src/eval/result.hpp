#pragma once
// What an evaluation found: the checks it ran (each with its evidence) and the
// timings it took. These are values: a failing candidate is normal data.
#include <nlohmann/json.hpp>

#include <optional>
#include <string>
#include <vector>

namespace kforge::eval {

// Check names, also the evaluation's status when that check is the first to fail.
// The order is the priority in which a failure is reported: a crash explains a wrong
// answer, a guard violation explains a corrupted output, and so on.
inline constexpr const char* check_order[] = {
    "build_failed",    // the candidate does not compile
    "load_failed",     // it compiles but cannot be loaded or lacks kf_forward
    "protocol_error",  // something forged or corrupted the worker's result channel
    "resource_limit",  // a sandbox limit ended it: CPU time, file size, memory, processes/threads
    "crashed",         // the worker died on a signal (segfault, abort, ...)
    "device_error",    // a sticky GPU fault: illegal address, launch failure, device-side assert
    "timeout",         // the watchdog killed it
    "exited_early",    // the worker exited before reporting a result (exit(0) in the candidate)
    "returned_error",  // kf_forward returned non-zero
    "guard",           // a write outside a buffer (canary bytes changed)
    "inputs_modified", // an input differs after the call
    "side_stream",     // a kernel of the candidate's ran on a stream other than args->stream (CUDA: CUPTI launch callbacks)
    "deferred_work",   // outputs changed after the call's stream was done: work on another stream or a thread
    "unwritten",       // an output element still holds the poison
    "nonfinite",       // NaN/Inf where the oracle has none, or the reverse
    "tolerance",       // error against the oracle beyond alpha x the reference's own error
    "repeat",          // two calls on identical inputs disagree
    "timed_output",    // a call during timing, on fresh inputs, gave a wrong answer (it behaves differently when timed)
    "impossible_time", // timed under the device's physical floor (bytes / bandwidth, FLOPs / peak)
};

/// Statuses only a GPU backend can produce (the CPU adversarial suite cannot cover them;
/// impossible_time needs a calibrated device).
inline constexpr const char* gpu_only_checks[] = {"device_error", "side_stream", "impossible_time"};

/// @return the position of a check name in check_order (unknown names sort last).
[[nodiscard]] int check_priority(const std::string& name);

struct check_result {
  std::string name;
  std::string case_name; // input distribution; empty for whole-candidate checks
  int trial = -1;
  int run = 0;           // 0: first call on these inputs, 1: the repeat
  std::string output;    // output tensor, when the check is about one
  bool passed = true;
  std::string message;   // one line: what failed, where, the worst element and its expected value
  nlohmann::json detail = nlohmann::json::object();
};

struct timing_summary {
  std::string subject; // "candidate", "reference", baseline name
  int samples = 0;
  double median_s = 0, mean_s = 0, min_s = 0, max_s = 0, stdev_s = 0, p10_s = 0, p90_s = 0;
  double ci_rel = 0; // half-width of the 95% CI of the median, relative to the median
  bool converged = false; // ci_rel reached the target before the budget ran out
};

[[nodiscard]] nlohmann::json to_json(const check_result& c);
[[nodiscard]] nlohmann::json to_json(const timing_summary& t);

} // namespace kforge::eval
