#pragma once
// The candidate's verification worker (role "verify": the candidate alone, two calls per
// trial, its outputs judged here as they arrive), and how any worker that ran candidate
// code and did not end cleanly becomes a failed check naming where it was.
//   auto v = worker::verify_candidate(ctx, builds.candidate.library, source, trials, seed, judge, add);
//   if (auto f = worker::process_failure(v.outcome, "a verification call", trials)) add(*f);
#include "worker/device_judge.hpp"
#include "worker/early_workers.hpp"
#include "worker/judge.hpp"
#include "worker/stage.hpp"
#include "worker/supervisor.hpp"

#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace kforge::worker {

/// A worker that did not end cleanly as one failed check (crashed, timeout, exited_early,
/// protocol_error; resource_limit when SIGXCPU or SIGXFSZ ended it), placed at the trial its
/// last "progress" frame named.
/// @return nothing when it ended with its final frame
[[nodiscard]] std::optional<eval::check_result> process_failure(const worker_outcome& o, const std::string& phase,
                                                                const nlohmann::json& trials);

/// The check's message with its case and trial in front, when it has them.
[[nodiscard]] std::string with_place(const eval::check_result& c);

struct verify_run {
  worker_outcome outcome;
  /// Whether the candidate's launches were watched for side streams (launch_guard.hpp), and
  /// why not: {"watched": bool, "why": ...}; null where the worker does not say.
  nlohmann::json launches;
  double judge_s = 0; // of its wall time, the part spent judging its outputs here
};

/// Runs the verify worker on `trials`; every check it reports and every output (through
/// `j`) becomes a check on `add` as it arrives.
[[nodiscard]] verify_run verify_candidate(const worker_context& ctx, const std::filesystem::path& library,
                                          const std::filesystem::path& candidate_source, const nlohmann::json& trials,
                                          std::uint64_t canary_seed, judge& j, const check_sink& add);

/// The same on the GPU-resident path: the candidate in a "call" worker that maps the judge's
/// verification sets (j.verify_sets(): one, or two where device memory allows). Trials go
/// in batches of that many: the judge loads each batch's inputs, the worker calls on each
/// set in turn, runs on for one deferred-work pause, is stopped, and the judge judges each
/// in place (checks to `add`); then the same for the repeat. Truth of trials not in `keep`
/// is dropped once judged. `w` is the worker start_call_worker started (early: its start
/// overlaps the truth). Each step's span goes to `steps`, when given.
[[nodiscard]] verify_run verify_on_device(std::unique_ptr<worker_session> w, const nlohmann::json& trials,
                                          device_judge& j, const std::set<int>& keep, const check_sink& add,
                                          timeline* steps = nullptr);

/// A "call" worker for the judge's verification sets (role_call.cpp): started, handed their
/// fds. With `early` (defer_call_worker's, started during the build) that one is completed instead.
[[nodiscard]] std::unique_ptr<worker_session>
start_call_worker(const worker_context& ctx, const std::filesystem::path& library,
                  const std::filesystem::path& candidate_source, device_judge& j, std::uint64_t canary_seed,
                  double timeout_s, const nlohmann::json& trials, const check_sink& add,
                  std::unique_ptr<deferred_worker> early = nullptr);

/// The same worker started before the build ends (early_workers.hpp) on `library`, a staged
/// path the candidate appears at later; `warm`: modules it imports meanwhile.
[[nodiscard]] std::unique_ptr<deferred_worker> defer_call_worker(const worker_context& ctx,
                                                                 const std::filesystem::path& library,
                                                                 double timeout_s,
                                                                 const std::vector<std::string>& warm);

} // namespace kforge::worker
