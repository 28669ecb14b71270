#pragma once
// Where a candidate is confined: the policy every worker role runs under (sandbox/policy.hpp)
// and the argv prefix that applies it through kforge-confine. A worker may read the system's
// libraries, its problem's directory and exactly the libraries its job loads; it may write only
// its private scratch (and, for the sanitizer and the profiler, the folder their report goes
// to); it gets the GPU device nodes of a CUDA problem, an environment built from scratch, and
// limits sized from the problem (its [eval] memory_limit_mb / max_threads, else the defaults).
//   auto l = confine_worker(&p, "verify", {cand.library});
//   argv = l.prefix + wrapper + {worker_exe};  ...  l.cleanup();
#include "problem/problem.hpp"
#include "sandbox/policy.hpp"

#include <filesystem>
#include <functional>
#include <string>
#include <vector>

namespace kforge::worker {

struct launch {
  std::vector<std::string> prefix; // kforge-confine --policy ... --report-fd 4 --; empty: unconfined
  std::function<void()> cleanup;   // removes the scratch directory; safe to call once the worker ended
  std::string unconfined_reason;   // why prefix is empty (KFORGE_SANDBOX=off)
};

/// The sandbox limits of a worker of `role` for problem `p` (nullptr: calibration).
[[nodiscard]] sandbox::limits worker_limits(const problem::problem* p, const std::string& role);

/// How to start a worker of `role` ("oracle", "verify", "time", "time_trusted", "sanitize",
/// "profile", "calibrate") that loads `libraries`. `writable`: folders it may write besides its
/// scratch (a sanitizer's log, a profiler's report). `tool`: the wrapper program the worker runs
/// under (compute-sanitizer, ncu), whose installation it may read.
[[nodiscard]] launch confine_worker(const problem::problem* p, const std::string& role,
                                    const std::vector<std::filesystem::path>& libraries,
                                    const std::vector<std::filesystem::path>& writable = {},
                                    const std::filesystem::path& tool = {});

} // namespace kforge::worker
