#include "worker/worker_process.hpp"

#include "core/error.hpp"
#include "device/backend.hpp"
#include "device/cuda_backend.hpp"
#include "problem/problem.hpp"
#include "worker/protocol.hpp"
#include "worker/roles.hpp"

#include <fcntl.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <iostream>
#include <string>
#include <map>

namespace kforge::worker {

int worker_process_main() {
  // Nothing outside this process may read its memory or ptrace it (where the kernel enforces it).
  ::prctl(PR_SET_DUMPABLE, 0);
  // The job is the first line on stdin; further lines are the parent's commands, for the
  // roles that take them (the timing workers). Every other role's stdin is /dev/null.
  std::string text;
  std::getline(std::cin, text);
  auto job = nlohmann::json::parse(text, nullptr, false);
  if (job.is_discarded() || !job.is_object() || !job.contains("nonce")) {
    std::cerr << "kforge-worker: expected a JSON job on stdin (this program is started by kforge)\n";
    return 2;
  }
  const std::string role = job.value("role", "");
  const bool interactive = role == "time" || role == "time_trusted" || role == "judge" || role == "call";
  if (!interactive) {
    int devnull = ::open("/dev/null", O_RDONLY);
    if (devnull >= 0) ::dup2(devnull, 0);
  }
  auto n = nonce_from_hex(job["nonce"]);
  if (!n) return 2;
  channel_writer ch(result_fd, *n);
  ::fcntl(result_fd, F_SETFD, FD_CLOEXEC); // programs the candidate starts do not inherit the channel
  try {
    ch.send({{"type", "hello"}, {"pid", ::getpid()}});
    if (role == "calibrate") {
      run_calibrate(ch, job);
      ch.send({{"type", "done"}});
      return 0;
    }
    // "shapes": tensor shapes that replace the problem's (the reduced shape of a sanitizer run).
    const auto p = problem::with_shapes(problem::load(job["problem"].get<std::string>()),
                                        job.value("shapes", std::map<std::string, std::vector<int64_t>>{}));
    auto dev = device::make_backend(p.backend, job.value("device", 0));
    int rc = 0;
    if (role == "oracle") rc = run_oracle(ch, p, job, *dev);
    else if (role == "verify") rc = run_verify(ch, p, job, *dev);
    else if (role == "judge") rc = run_judge(ch, p, job, *dev, std::cin);
    else if (role == "call") rc = run_call(ch, p, job, *dev, std::cin);
    else if (interactive) rc = run_time(ch, p, job, *dev, std::cin);
    else if (role == "profile") rc = run_profile(ch, p, job, *dev);
    else KFORGE_THROW(internal, "unknown worker role '{}'", role);
    ch.send({{"type", "done"}});
    return rc;
  } catch (const device::fault& f) {
    // The context is gone; report it as the candidate's fault (only candidate code ran on it).
    try {
      ch.send({{"type", "error"}, {"reason", "device_error"}, {"message", f.what()}});
      ch.send({{"type", "done"}});
    } catch (...) {
    }
    return 1;
  } catch (const resource_limit_hit& e) {
    // Candidate code hit a sandbox limit outside a call that reports it in place (timing, profiling).
    try {
      ch.send({{"type", "error"}, {"reason", "resource_limit"}, {"message", e.what()}});
      ch.send({{"type", "done"}});
    } catch (...) {
    }
    return 1;
  } catch (const std::exception& e) {
    try {
      ch.send({{"type", "error"}, {"reason", "worker_error"}, {"message", e.what()}});
      ch.send({{"type", "done"}});
    } catch (...) {
    }
    return 1;
  }
}

} // namespace kforge::worker
