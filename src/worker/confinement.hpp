#pragma once
// How a worker is started confined: the one place every worker start asks (worker_session,
// run_worker). The argv prefix (kforge-confine ... --) goes before any wrapper
// (compute-sanitizer, ncu) and the worker; the confined process reports the layers in force
// on descriptor 4 (worker_outcome::confinement).
// (The signature is the one src/sandbox/'s implementation on main has; this branch's .cpp
// starts every worker unconfined.)
#include "problem/problem.hpp"

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

/// How to start a worker of `role` ("oracle", "verify", "time", "time_trusted", "sanitize",
/// "profile", "calibrate") that loads `libraries`. `writable`: folders it may write besides its
/// scratch (a sanitizer's log, a profiler's report). `tool`: the wrapper program the worker runs
/// under (compute-sanitizer, ncu), whose installation it may read.
[[nodiscard]] launch confine_worker(const problem::problem* p, const std::string& role,
                                    const std::vector<std::filesystem::path>& libraries,
                                    const std::vector<std::filesystem::path>& writable = {},
                                    const std::filesystem::path& tool = {});

} // namespace kforge::worker
