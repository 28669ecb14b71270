#pragma once
// compute-sanitizer on a candidate: memcheck, racecheck, initcheck and synccheck, each
// running the verify worker once (one trial of the first case) at the problem's
// [sanitize] shapes, each becoming one check named sanitize_<tool> that passes when the
// tool reports no error. kforge's own checks see bytes (a canary changed, an output is
// wrong); the sanitizer sees accesses: an out-of-bounds read that lands in the guard
// region, a shared-memory race that happens to give the right answer, a read of memory
// nobody wrote, a __syncthreads() that not every thread reaches.
//   worker::sanitize_options o;  o.on_check = [&](auto& c) { db.put_check(...); };
//   auto s = worker::sanitize(problem, "my_kernel.cu", o);   // what `optimize` calls on a new best
//   if (!s.skipped.empty()) say(s.skipped);  else for (auto& c : s.checks) ...  s.passed()
#include "eval/result.hpp"
#include "problem/problem.hpp"
#include "worker/supervisor.hpp"

#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace kforge::worker {

/// One kind of error compute-sanitizer reported, with where it first happened.
struct sanitizer_finding {
  std::string tool;
  std::string kind;     // "Invalid __global__ read of size 4 bytes", "Race reported between Write access and Read access"
  std::string severity; // "error" or "warning" (racecheck's hazards that cannot change results)
  std::string kernel;   // the function named by the first "at ..." line
  std::string location; // "file.cu:12" when built with line info, else the pc offset
  std::string thread;   // "thread (0,0,0) in block (3,0,0)"
  std::string address;  // "Address 0x7f... is out of bounds"
  int count = 1;        // reports of this kind in this kernel
};

struct sanitizer_report {
  std::string tool;
  std::optional<int> error_count; // from "ERROR SUMMARY: N errors" (racecheck: its summary); none when absent
  std::vector<sanitizer_finding> findings;
};

/// Parses compute-sanitizer's report ("========= " lines; anything else is ignored).
[[nodiscard]] sanitizer_report parse_sanitizer_output(const std::string& tool, const std::string& text);

/// "Race reported between ... in kernel k (x2)": one line per finding, for terminals.
[[nodiscard]] std::string describe(const sanitizer_finding& f);

/// compute-sanitizer: $KFORGE_COMPUTE_SANITIZER, else beside the nvcc in use, else on PATH.
/// @return empty when none is found.
[[nodiscard]] std::filesystem::path find_compute_sanitizer();

/// The command put in front of the worker for one tool, its report written to `log`.
[[nodiscard]] std::vector<std::string> sanitizer_command(const std::filesystem::path& sanitizer,
                                                         const std::string& tool, const std::filesystem::path& log);

struct sanitize_options {
  std::filesystem::path worker_exe;  // empty: default_worker_exe()
  std::filesystem::path sanitizer;   // empty: find_compute_sanitizer()
  std::vector<std::string> tools;    // empty: the problem's [sanitize] tools
  double timeout_s = 0;              // per tool; 0: the problem's [sanitize] timeout_s
  std::optional<std::uint64_t> seed; // the trial's input seed; else fresh
  int device = 0;                    // device ordinal the worker runs on
  std::function<void(const eval::check_result&)> on_check; // each tool's check as it completes
};

struct sanitize_result {
  std::string skipped; // why nothing ran (a CPU problem, no compute-sanitizer); empty when it ran
  std::vector<eval::check_result> checks; // sanitize_<tool>, in the order run
  nlohmann::json confinement;             // what the last tool's worker ran under (worker_outcome::confinement)
  [[nodiscard]] bool passed() const; // skipped, or every check passed
};

/// Why compute-sanitizer cannot run on `p` with `opts`, or "" when it can.
[[nodiscard]] std::string sanitize_unavailable(const problem::problem& p, const sanitize_options& opts);

/// Builds the candidate (the build cache makes a built one free) and runs every tool.
/// A CUDA problem only: for a CPU problem, or without compute-sanitizer, `skipped` says so.
/// @throws kforge::error only when the worker cannot be started.
[[nodiscard]] sanitize_result sanitize(const problem::problem& p, const std::filesystem::path& candidate_source,
                                       const sanitize_options& opts);

/// Every tool on an already built candidate library (evaluate() calls this after verify).
/// It does not check the backend: the tests run it on a CPU problem with a stand-in sanitizer.
[[nodiscard]] sanitize_result sanitize_library(const problem::problem& p, const std::filesystem::path& library,
                                               const sanitize_options& opts);

/// One tool's run as a check: passed when the report says 0 errors and the worker finished.
[[nodiscard]] eval::check_result sanitize_check(const std::string& tool, const worker_outcome& run,
                                                const std::string& report_text);

} // namespace kforge::worker
