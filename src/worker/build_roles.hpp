#pragma once
// The builds of one evaluation, all at once (each compiler is one process; the cache makes
// repeats free): the reference at the problem's dtype and in double (the oracle), unless the
// reference is a [torch] module; the candidate; and the baselines when it is to be timed.
//   auto b = worker::build_roles(p, "cand.cpp", true, observer, ev.builds);
//   if (!b.candidate.ok) add_check(worker::build_failure("cand.cpp", b.candidate));
#include "build/compiler.hpp"
#include "eval/result.hpp"
#include "worker/evaluate.hpp"

#include <filesystem>
#include <functional>
#include <vector>

namespace kforge::worker {

struct role_artifacts {
  build::artifact reference, oracle; // {.ok = true} and no library for a [torch] problem
  build::artifact candidate;
  std::vector<build::artifact> baselines; // in p.baselines' order; empty when not timing
  /// kforge's own device kernels (eval/device_kernels.hpp), for the GPU-resident path; not
  /// ok (diagnostics say why) when that path is refused for the problem or they do not build.
  build::artifact kernels;
};

/// Each build is handed to observer.on_build and appended to `record` in a fixed order:
/// reference, oracle, candidate, baselines.
/// @throws kforge::error (problem) when the reference, the oracle or a baseline does not
/// compile: the problem's fault, not the candidate's.
/// `trusted_built`, when given, is called with the reference, oracle and device kernels once
/// they are built (the candidate maybe still compiling), so that the judge can start meanwhile;
/// on the calling thread, which a process started there must not outlive (PR_SET_PDEATHSIG).
/// What the candidate's build is asked (build_roles compiles exactly this): early workers plan
/// from it (early_workers.hpp).
[[nodiscard]] build::request candidate_request(const problem::problem& p, const std::filesystem::path& candidate_source);

[[nodiscard]] role_artifacts build_roles(const problem::problem& p, const std::filesystem::path& candidate_source,
                                         bool with_baselines, const evaluate_observer& observer,
                                         std::vector<role_build>& record,
                                         const std::function<void(const role_artifacts&)>& trusted_built = {});

/// The build_failed check of a candidate that does not compile: its compiler's first error.
[[nodiscard]] eval::check_result build_failure(const std::filesystem::path& candidate_source,
                                               const build::artifact& candidate);

} // namespace kforge::worker
