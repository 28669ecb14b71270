// What the worker's roles share (roles.hpp).
#include "worker/roles.hpp"

#include "worker/launch_guard.hpp"

#include "core/fd_passing.hpp"

#include <unistd.h>

#include <fmt/format.h>

#include <variant>

namespace kforge::worker {

std::vector<int> shared_sets(const nlohmann::json& job) {
  if (job.contains("shared_fds")) return job["shared_fds"].get<std::vector<int>>();
  auto got = recv_fds(share_fd);
  ::close(share_fd);
  return got.fds;
}

trial trial_of(const nlohmann::json& tj) { return {tj["case"], tj["seed"], tj["trial"]}; }

void send_outputs(channel_writer& ch, const std::vector<eval::host_tensor>& outs, const std::string& subject, int t,
                  int run) {
  for (std::size_t k = 0; k < outs.size(); ++k)
    ch.send({{"type", "output"}, {"subject", subject}, {"trial", t}, {"run", run}, {"index", k},
             {"dtype", static_cast<int>(outs[k].dtype)}},
            outs[k].bytes.data(), outs[k].bytes.size());
}

namespace {
int in_call(const std::function<int(const kf_args*)>& fn, kf_args* args, launch_guard* guard) {
  struct scope {
    launch_guard* g;
    ~scope() {
      if (g) g->end_call();
    }
  } s{guard};
  if (guard) guard->begin_call();
  return within_limits("kf_forward", [&] { return fn(args); });
}
} // namespace

int call_forward(const kernel_library& k, kf_args* args, launch_guard* guard) { return in_call(k.forward, args, guard); }

int call_unplaced(const kernel_library& k, kf_args* args, launch_guard* guard) {
  return in_call(k.unplaced ? k.unplaced : k.forward, args, guard);
}

int place_outputs(const kernel_library& k, int rc) { return k.place ? k.place(rc) : rc; }

double time_forward(device::backend& dev, const kernel_library& k, kf_args* args, launch_guard* guard, int* rc) {
  const double seconds = dev.time_call([&] { return call_unplaced(k, args, guard); }, rc);
  *rc = place_outputs(k, *rc);
  return seconds;
}

void send_check(channel_writer& ch, const eval::check_result& c, int trial, int run) {
  auto j = eval::to_json(c);
  j["type"] = "check";
  j["trial"] = trial;
  j["run"] = run;
  ch.send(j);
}

eval::check_result deferred_work_check(const std::vector<std::string>& late) {
  return {.name = "deferred_work", .passed = late.empty(),
          .message = late.empty() ? ""
                                  : fmt::format("output '{}' changed after the call's stream was done: work outside "
                                                "args->stream, or a thread that outlives the call",
                                                late.front()),
          .detail = {{"changed", late}}};
}

eval::check_result guard_check(const std::vector<std::string>& violations) {
  return {.name = "guard", .passed = violations.empty(),
          .message = violations.empty() ? "" : "out-of-bounds write: " + violations.front(),
          .detail = {{"violations", violations}}};
}

eval::check_result inputs_modified_check(const std::vector<std::string>& changed) {
  return {.name = "inputs_modified", .passed = changed.empty(),
          .message = changed.empty() ? "" : fmt::format("the candidate changed input '{}'", changed.front()),
          .detail = {{"changed", changed}}};
}

std::optional<std::pair<kernel_library, kernel_library>>
load_reference_and_oracle(channel_writer& ch, const nlohmann::json& job, const problem::problem& p, device::backend& dev) {
  auto ref = load_kernel(job["libraries"]["reference"], p, dev);
  auto orc = load_kernel(job["libraries"]["oracle"], p, dev);
  for (auto* l : {&ref, &orc})
    if (auto* e = std::get_if<std::string>(l)) {
      ch.send({{"type", "error"}, {"reason", "load_failed"}, {"message", "reference: " + *e}});
      return std::nullopt;
    }
  return std::pair{std::get<kernel_library>(std::move(ref)), std::get<kernel_library>(std::move(orc))};
}

std::size_t workspace_size(const kernel_library& k, eval::tensor_set& ts) {
  return k.workspace ? within_limits("kf_workspace_bytes", [&] { return k.workspace(&ts.args()); }) : 0;
}

std::string returned_message(const kernel_library& k, int rc) {
  const auto why = k.last_error();
  return why.empty() ? fmt::format("kf_forward returned {}", rc) : fmt::format("kf_forward returned {}: {}", rc, why);
}

} // namespace kforge::worker
