// Role "call": the candidate alone, in a GPU-resident evaluation. It maps the judge's shared
// verification sets (one or two; their fds arrive on share_fd), so its inputs and outputs are
// memory the judge owns and reads in place; its workspace is its own (one per set), guarded and
// poisoned here. Each command is one call on one set ("slot": its place among the fds); the
// parent stops this process while the judge loads or reads the sets.
//   {"cmd":"call","slot":k,"trial":t,"run":r}  -> {"type":"called"}, or a failed check
// What only this process can see is reported here: kf_forward's return value, a device
// fault, a sandbox limit, and writes past the workspace.
#include "worker/roles.hpp"

#include "core/error.hpp"
#include "device/cuda_backend.hpp"
#include "device/share.hpp"
#include "worker/launch_guard.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <memory>
#include <variant>
#include <vector>

namespace kforge::worker {

int run_call(channel_writer& ch, const problem::problem& p, const nlohmann::json& job, device::backend& dev,
             std::istream& commands) {
  // The set first, before any candidate code is loaded: the socket is closed before it runs.
  const auto fds = shared_sets(job);
  if (fds.empty() || fds.size() > 2)
    KFORGE_THROW(worker, "call worker: expected one or two shared sets, got {}", fds.size());
  std::vector<device::shared_memory> sets;
  for (int fd : fds) {
    sets.push_back(device::shared_memory::import(job.value("device", 0), fd, job["set_bytes"].get<std::size_t>()));
    ::close(fd);
  }
  // Watching launches before candidate code loads: a thread its initialisers start is seen too.
  std::string unwatched;
  auto guard = launch_guard::start(dev.stream(), &unwatched);
  auto cand = load_kernel(job["libraries"]["candidate"], p, dev);
  if (auto* e = std::get_if<std::string>(&cand)) {
    ch.send({{"type", "error"}, {"reason", "load_failed"}, {"message", *e}});
    return 0;
  }
  auto& k = std::get<kernel_library>(cand);
  std::vector<std::unique_ptr<eval::tensor_set>> slots;
  for (auto& set : sets) slots.push_back(std::make_unique<eval::tensor_set>(dev, p, set.data()));
  // Workspace poison differs between the two calls on the same inputs, so a candidate that
  // reads workspace it never wrote computes two different answers.
  constexpr std::uint8_t ws_poison[2] = {0xFF, 0x55};
  int at_trial = -1, at_run = 0;
  auto check = [&](const char* name, const std::string& message) {
    send_check(ch, {.name = name, .passed = false, .message = message}, at_trial, at_run);
  };
  try {
    ch.send({{"type", "progress"}, {"phase", "workspace"}});
    const auto ws_bytes = workspace_size(k, *slots[0]);
    for (auto& ts : slots) ts->set_workspace(ws_bytes, job.value("canary_seed", std::uint64_t{1}) + 7);
    nlohmann::json load_steps = nlohmann::json::array();
    for (auto& s : k.load_steps) load_steps.push_back({s.name, s.begin_ns, s.end_ns});
    ch.send({{"type", "ready"}, {"launches_watched", guard != nullptr}, {"unwatched_because", unwatched},
             {"load_steps", load_steps}});
    for (std::string line; std::getline(commands, line);) {
      const auto cmd = nlohmann::json::parse(line, nullptr, false);
      if (!cmd.is_object() || cmd.value("cmd", "") != "call")
        KFORGE_THROW(worker, "call worker: unknown command '{}'", line.substr(0, 200));
      at_trial = cmd.value("trial", -1);
      at_run = cmd.value("run", 0);
      const auto slot = cmd.value("slot", std::size_t{0});
      if (slot >= slots.size()) KFORGE_THROW(worker, "call worker: no set in slot {}", slot);
      auto& ts = *slots[slot];
      ch.send({{"type", "progress"}, {"phase", "call"}, {"trial", at_trial}, {"run", at_run}});
      ts.poison_workspace(ws_poison[at_run & 1]);
      dev.synchronize(); // the judge's poison and the workspace's are in place before the candidate starts
      int rc = 0;
      try {
        rc = call_forward(k, &ts.args(), guard.get());
        ts.copy_answers();        // the call's answer: what its stream has done, in this context
        dev.synchronize_stream();
      } catch (const device::fault& f) {
        check("device_error", fmt::format("the candidate faulted the GPU: {}", f.what()));
        return 0;
      }
      if (rc != 0) {
        check("returned_error", returned_message(k, rc));
        return 0;
      }
      if (auto bad = ts.check_guards(); !bad.empty()) check("guard", "out-of-bounds write: " + bad.front());
      if (guard)
        if (auto v = guard->take_violation()) check(v->check.c_str(), v->message);
      ch.send({{"type", "called"}, {"trial", at_trial}, {"run", at_run}});
    }
  } catch (const resource_limit_hit& e) {
    check("resource_limit", e.what());
  }
  return 0;
}

} // namespace kforge::worker
