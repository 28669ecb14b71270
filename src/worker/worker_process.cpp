#include "worker/worker_process.hpp"

#include "core/error.hpp"
#include "core/fd_passing.hpp"
#include "device/backend.hpp"
#include "device/cuda_backend.hpp"
#include "problem/problem.hpp"
#include "worker/command_input.hpp"
#include "worker/protocol.hpp"
#include "worker/python_library.hpp"
#include "worker/roles.hpp"

#include <fcntl.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <chrono>
#include <iostream>
#include <string>
#include <map>

namespace kforge::worker {
namespace {

// The job's Python candidate, if it has one (libraries.candidate, or a subject's library).
std::string python_library_of(const nlohmann::json& job) {
  auto py = [](const nlohmann::json& v) { return v.is_string() && v.get<std::string>().ends_with(".py"); };
  if (auto l = job.value("libraries", nlohmann::json::object()); l.contains("candidate") && py(l["candidate"]))
    return l["candidate"];
  for (auto& s : job.value("subjects", nlohmann::json::array()))
    if (s.is_object() && s.contains("library") && py(s["library"])) return s["library"];
  return "";
}

// A deferred job ("deferred": true) is started before the parent can give all of it (the
// candidate's build is still running), so that what needs none of the rest happens meanwhile:
// a Python candidate's interpreter and kforge's host (torch), and the modules its source names
// ("warm_modules"), from the build record beside the library path (written before the build).
// No candidate code runs here; the library itself appears only once the build has ended.
// The rest arrives on share_fd as one message: a JSON object merged into the job, and the
// judge's sets, kept in "shared_fds" (roles.hpp: shared_sets).
void complete_deferred(nlohmann::json& job) {
  if (const auto py = python_library_of(job); !py.empty())
    (void)start_python(python_info_path(py), job.value("warm_modules", std::vector<std::string>{})); // a failure: load says it
  auto got = recv_fds(share_fd);
  ::close(share_fd);
  const auto rest = nlohmann::json::parse(got.label, nullptr, false);
  if (!rest.is_object()) KFORGE_THROW(worker, "deferred job: the rest of the job is not a JSON object");
  for (auto& [k, v] : rest.items()) job[k] = v;
  job["shared_fds"] = got.fds;
}

} // namespace

int worker_process_main() {
  // Nothing outside this process may read its memory or ptrace it (where the kernel enforces it).
  ::prctl(PR_SET_DUMPABLE, 0);
  // The job is the first line on stdin; further lines are the parent's commands, for the
  // roles that take them (the timing workers). Every other role's stdin is /dev/null.
  command_input input(0);
  std::istream commands(&input);
  std::string text;
  std::getline(commands, text);
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
    if (job.value("deferred", false)) complete_deferred(job);
    if (role == "time" || role == "time_trusted") // the wait between samples (worker/command_input.hpp)
      input.set_spin(std::chrono::microseconds(job.value("timing", nlohmann::json::object()).value("host_spin_us", 0)));
    // "shapes": tensor shapes that replace the problem's (the reduced shape of a sanitizer run).
    const auto p = problem::with_shapes(problem::load(job["problem"].get<std::string>()),
                                        job.value("shapes", std::map<std::string, std::vector<int64_t>>{}));
    auto dev = device::make_backend(p.backend, job.value("device", 0));
    int rc = 0;
    if (role == "oracle") rc = run_oracle(ch, p, job, *dev);
    else if (role == "verify") rc = run_verify(ch, p, job, *dev);
    else if (role == "judge") rc = run_judge(ch, p, job, *dev, commands);
    else if (role == "call") rc = run_call(ch, p, job, *dev, commands);
    else if (interactive) rc = run_time(ch, p, job, *dev, commands);
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
