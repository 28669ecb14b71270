#pragma once
// The roles of the kforge-worker process (worker_process.hpp), one file each, and what
// they share. Each reads its part of the job, reports on the result channel and returns
// the process's exit code; worker_process.cpp sends the final "done".
//   role_oracle.cpp     reference + float64 oracle on every trial (never a candidate)
//   role_verify.cpp     the candidate, two calls per trial, with its checks
//   role_judge.cpp      GPU-resident: inputs, truth and judging on the device (never a candidate)
//   role_call.cpp       GPU-resident: the candidate, one call at a time in the judge's buffers
//   role_time.cpp       subjects timed one sample at a time, as the parent asks
//                       ("time": the candidate; "time_trusted": reference and baselines)
//   role_profile.cpp    one candidate call inside the profiler's range
//   role_calibrate.cpp  the device's ceilings
#include "device/backend.hpp"
#include "eval/buffers.hpp"
#include "eval/result.hpp"
#include "problem/problem.hpp"
#include "worker/kernel_library.hpp"
#include "worker/protocol.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <cstdint>
#include <istream>
#include <new>
#include <optional>
#include <utility>
#include <stdexcept>
#include <string>
#include <system_error>
#include <vector>

namespace kforge::worker {

/// One verification trial as the parent planned it (worker/plan.hpp).
struct trial {
  std::string case_name;
  std::uint64_t seed;
  int index;
};
[[nodiscard]] trial trial_of(const nlohmann::json& tj);

/// Sends each output as an "output" frame: {subject, trial, run, index, dtype} + its bytes.
void send_outputs(channel_writer& ch, const std::vector<eval::host_tensor>& outs, const std::string& subject, int t,
                  int run);

/// A limit of the sandbox that candidate code hit (what() says which), reported as the
/// check resource_limit: the worker's memory (RLIMIT_DATA, a cgroup), or its processes and
/// threads (RLIMIT_NPROC, a pids cgroup). CPU time and file size end the worker by signal
/// instead (SIGXCPU, SIGXFSZ: candidate_run.cpp names those).
struct resource_limit_hit : std::runtime_error {
  using std::runtime_error::runtime_error;
};

/// Runs `call`, a call into an implementation (`where`: "kf_forward", "kf_workspace_bytes"),
/// turning what an exhausted limit throws into resource_limit_hit: std::bad_alloc, and
/// std::system_error with errc::resource_unavailable_try_again (std::thread, std::async).
/// Anything else it throws passes through.
template <class F> auto within_limits(const char* where, F&& call) -> decltype(call()) {
  try {
    return call();
  } catch (const std::bad_alloc& e) {
    throw resource_limit_hit(fmt::format("memory limit: an allocation failed in {} ({})", where, e.what()));
  } catch (const std::system_error& e) {
    if (e.code() != std::errc::resource_unavailable_try_again) throw;
    throw resource_limit_hit(
        fmt::format("process/thread limit: a thread or process could not be created in {} ({})", where, e.what()));
  }
}

class launch_guard;

/// kf_forward in the call's scope: with `guard` (may be null) the launches it makes are the
/// candidate's (launch_guard.hpp), until it returns or throws; a sandbox limit it hits is a
/// resource_limit_hit (within_limits).
int call_forward(const kernel_library& k, kf_args* args, launch_guard* guard);

/// call_forward's call without placing its outputs (kernel_library::unplaced, where the
/// implementation has one; else the whole call): what a timed call runs, place() after the timer.
int call_unplaced(const kernel_library& k, kf_args* args, launch_guard* guard);

/// The outputs an unplaced call left in the implementation's memory, into the args' outputs
/// (kernel_library::place; nothing to do for the others). @return the call's rc
int place_outputs(const kernel_library& k, int rc);

/// One timed call of `k` (dev.time_call over call_unplaced, then place_outputs): kforge's copy
/// of returned outputs is not in the interval. *rc: the call's.
[[nodiscard]] double time_forward(device::backend& dev, const kernel_library& k, kf_args* args, launch_guard* guard,
                                  int* rc);

/// A check as a "check" frame of trial t's call `run`.
void send_check(channel_writer& ch, const eval::check_result& c, int trial, int run);

/// The checks a candidate's call gets wherever its buffers are read (role_verify on the host
/// path, role_judge on the GPU path), from what was found: the outputs that changed after the
/// call's stream was done, the guards overwritten, the inputs changed.
[[nodiscard]] eval::check_result deferred_work_check(const std::vector<std::string>& late);
[[nodiscard]] eval::check_result guard_check(const std::vector<std::string>& violations);
[[nodiscard]] eval::check_result inputs_modified_check(const std::vector<std::string>& changed);

/// The job's reference and oracle (libraries.reference, libraries.oracle); nothing, once an
/// "error" frame (load_failed) has said why, when one of them does not load.
[[nodiscard]] std::optional<std::pair<kernel_library, kernel_library>>
load_reference_and_oracle(channel_writer& ch, const nlohmann::json& job, const problem::problem& p, device::backend& dev);

/// The judge's sets the parent hands this worker on share_fd (one message; the socket is then
/// closed): received now, or already, with a deferred job's rest (worker_process.cpp), which
/// keeps them in the job's "shared_fds". The caller closes them.
/// @throws kforge::error (worker) when the parent sent none
[[nodiscard]] std::vector<int> shared_sets(const nlohmann::json& job);

/// The implementation's workspace for the shapes of `ts` (0 when it declares none).
/// @throws resource_limit_hit (within_limits)
[[nodiscard]] std::size_t workspace_size(const kernel_library& k, eval::tensor_set& ts);

/// "kf_forward returned 3", with the implementation's own reason when it gives one.
[[nodiscard]] std::string returned_message(const kernel_library& k, int rc);

int run_oracle(channel_writer& ch, const problem::problem& p, const nlohmann::json& job, device::backend& dev);
int run_verify(channel_writer& ch, const problem::problem& p, const nlohmann::json& job, device::backend& dev);
/// Serves the parent's commands on `commands` (the worker's stdin) until "finish" or its end.
int run_time(channel_writer& ch, const problem::problem& p, const nlohmann::json& job, device::backend& dev,
             std::istream& commands);
/// The judge serves the parent's commands on `commands` (role_judge.cpp says which).
int run_judge(channel_writer& ch, const problem::problem& p, const nlohmann::json& job, device::backend& dev,
              std::istream& commands);
/// The candidate in the judge's shared set, a call per command (role_call.cpp).
int run_call(channel_writer& ch, const problem::problem& p, const nlohmann::json& job, device::backend& dev,
             std::istream& commands);
int run_profile(channel_writer& ch, const problem::problem& p, const nlohmann::json& job, device::backend& dev);
int run_calibrate(channel_writer& ch, const nlohmann::json& job);

} // namespace kforge::worker
