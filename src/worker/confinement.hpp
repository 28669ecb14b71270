#pragma once
// How a worker is started confined: the one place every worker start asks (worker_session,
// run_worker). The argv prefix (kforge-confine ... --) goes before any wrapper
// (compute-sanitizer, ncu) and the worker; the confined process reports the layers in force
// on descriptor 4 (worker_outcome::confinement).
#include "problem/problem.hpp"

#include <filesystem>
#include <functional>
#include <string>
#include <vector>

namespace kforge::worker {
struct launch { std::vector<std::string> prefix; std::function<void()> cleanup; };
/// How to start a worker of `role` ("oracle", "verify", "time", "time_trusted", "sanitize",
/// "profile", "calibrate") that loads `libraries`: the argv prefix (kforge-confine ... --) and
/// what to remove afterwards. Empty prefix: unconfined.
[[nodiscard]] launch confine_worker(const problem::problem* p, const std::string& role,
                                    const std::vector<std::filesystem::path>& libraries);
}
