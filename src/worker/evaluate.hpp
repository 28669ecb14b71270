#pragma once
// One evaluation of one candidate, end to end: build the reference, the oracle and the
// candidate; run the oracle worker (reference + float64 oracle, no candidate code); run
// the verify worker (candidate only); judge every output here, in the parent; if it
// passed, time the candidate (in its own worker) and the reference and baselines (in one
// that never loads candidate code), interleaved sample by sample. Where each stage lives:
// plan, build_roles, truth, judge, candidate_run, timing (.hpp beside this one).
//   worker::evaluate_options o;  o.observer.on_check = [&](auto& c) { db.put_check(...); };
//   auto ev = worker::evaluate(problem, "my_kernel.cpp", o);
//   ev.status == "passed" || ev.status == "tolerance" || ...   (see eval/result.hpp check_order)
#include "build/compiler.hpp"
#include "eval/compare.hpp"
#include "eval/result.hpp"
#include "problem/problem.hpp"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <string_view>
#include <string>
#include <vector>

namespace kforge::worker {

struct role_build {
  std::string role; // "reference", "oracle", "candidate"
  build::artifact artifact;
};

/// Called as each piece completes, so a caller can record it before the next starts.
struct evaluate_observer {
  std::function<void(const role_build&)> on_build;
  std::function<void(const eval::check_result&)> on_check;
  std::function<void(const eval::timing_summary&)> on_timing;
  /// A phase ("build", "oracle", "verify", "sanitize", "timing") starting (`seconds` empty),
  /// then done (its wall seconds): what `kforge eval` shows while it waits.
  std::function<void(std::string_view phase, std::optional<double> seconds)> on_phase;
};

/// A device held for the verify-and-time part of an evaluation (worker/scheduler gives
/// these out so that two evaluations never share a device). Released when `hold` dies.
struct device_lease {
  int ordinal = 0;            // which device of the problem's kind
  std::shared_ptr<void> hold; // the lane's lock
};

class judge_keeper;

struct evaluate_options {
  std::filesystem::path worker_exe;       // empty: default_worker_exe()
  std::optional<std::uint64_t> seed;      // fixes every trial's seed (reproduce a failure); else fresh randomness
  int trials_per_case = 0;                // 0: the problem's [eval] trials_per_case
  bool time = true;                       // time a passing candidate against the reference
  double time_budget_s = 0;               // 0: the problem's [eval] time_budget_s
  double timeout_s = 0;                   // 0: the problem's [eval] timeout_s
  bool sanitize = false;                  // compute-sanitizer on a candidate that passed verification (worker/sanitize.hpp)
  int device = 0;                         // device ordinal for the workers, when there is no acquire_device
  bool reuse_torch_baselines = false;     // [torch] problems: reuse eager/compile timings under an hour old (searches)
  /// Judges kept between the evaluations of a search or a check (judge_keeper.hpp); none: a
  /// new judge for this evaluation, ended with it.
  std::shared_ptr<judge_keeper> judges;
  /// Called once the builds are done and before the first worker starts; the evaluation
  /// holds the lease until its last worker has ended. Empty: use `device`, no gate.
  std::function<device_lease()> acquire_device;
  evaluate_observer observer;
};

struct case_reference_error {
  std::string case_name;
  std::string output;
  eval::reference_error error;
};

struct evaluation {
  std::string status = "passed"; // "passed", or the name of the first failing check (eval::check_order)
  std::string message;           // one line a user can act on
  std::optional<eval::check_result> failure; // the check that decided the status, when failed
  std::vector<role_build> builds;
  std::vector<eval::check_result> checks;
  std::vector<eval::timing_summary> timings;
  std::vector<case_reference_error> reference_errors; // the reference's own error, per case and output
  std::vector<nlohmann::json> trials;                 // {"case", "seed", "trial"}
  std::string device;                            // "cuda:1: NVIDIA H200 (...)": the device that verified and timed it
  int device_index = -1;                         // its ordinal; -1 when no worker ran (build failure)
  nlohmann::json roofline;                          // floor_s, bound, candidate/reference_fraction; null uncalibrated
  nlohmann::json phases = nlohmann::json::object(); // wall seconds: build_s, oracle_s, verify_s, judge_s, timing_s
  std::string worker_output;                          // what the candidate printed, truncated
  std::vector<std::string> review;                    // flags for a person (implausible speedup); not failures
  nlohmann::json sanitize;                            // null: not asked; {"skipped": why} or {"passed", "checks"}
  /// The confinement each worker ran under, by role ("oracle", "verify", "sanitize", "time",
  /// "time_trusted"; null for a worker started unconfined): the
  /// layers kforge-confine reported in force, or missing with the reason (sandbox/report.hpp).
  nlohmann::json confinement = nlohmann::json::object();
  /// Where the inputs, truth and judging ran: {"path": "device"} (GPU-resident, worker/device_judge.hpp)
  /// or {"path": "host", "why": ...}.
  nlohmann::json engine = nlohmann::json::object();
  /// What ran (CUDA, after timing; worker/kernel_trace.hpp), by subject ("candidate",
  /// "reference"): [{name, launches, gpu_s, library}] per call; "why_<subject>" when not traced.
  nlohmann::json kernels = nlohmann::json::object();
  [[nodiscard]] bool passed() const { return status == "passed"; }
  [[nodiscard]] const eval::timing_summary* timing(const std::string& subject) const;
  /// reference median / candidate median, when both were timed.
  [[nodiscard]] std::optional<double> speedup() const;
};

/// @throws kforge::error (problem) when the problem itself is broken (reference does not
/// build or crashes); every candidate failure is a value in the result.
[[nodiscard]] evaluation evaluate(const problem::problem& p, const std::filesystem::path& candidate_source,
                                  const evaluate_options& opts);

/// The reference's own errors as kforge.eval/1's "reference_error": [{case, output, max_abs, rel_l2, max_abs_oracle}].
[[nodiscard]] nlohmann::json to_json(const std::vector<case_reference_error>& errors);

/// The evaluation as `kforge eval --json` prints it (schema "kforge.eval/1", docs/json.md).
[[nodiscard]] nlohmann::json to_json(const evaluation& ev, const problem::problem& p);

} // namespace kforge::worker
