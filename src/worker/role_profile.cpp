// Role "profile" (kforge profile, under ncu).
#include "worker/roles.hpp"

#include "eval/inputs.hpp"

#include <variant>

namespace kforge::worker {

// One call of the candidate on one trial's inputs, inside the profiler's collection range
// (after a warm-up call outside it), for `kforge profile` under ncu.
int run_profile(channel_writer& ch, const problem::problem& p, const nlohmann::json& job, device::backend& dev) {
  auto cand = load_kernel(job["libraries"]["candidate"], p, dev);
  if (auto* e = std::get_if<std::string>(&cand)) {
    ch.send({{"type", "error"}, {"reason", "load_failed"}, {"message", *e}});
    return 0;
  }
  auto& k = std::get<kernel_library>(cand);
  const auto& tj = job["trials"].at(0);
  eval::tensor_set ts(dev, p, eval::precision::nominal, 7, false);
  ts.upload_inputs(eval::make_trial_inputs(p, tj["case"], tj["seed"], eval::precision::nominal));
  ts.set_workspace(workspace_size(k, ts), 9);
  for (int call = 0; call < 2; ++call) {
    ts.poison(0xFF);
    dev.synchronize();
    if (call == 1) dev.profiler_range(true);
    const int rc = within_limits("kf_forward", [&] { return k.forward(&ts.args()); });
    dev.synchronize();
    if (call == 1) dev.profiler_range(false);
    if (rc != 0) {
      ch.send({{"type", "error"}, {"reason", "returned_error"}, {"message", returned_message(k, rc)}});
      return 0;
    }
  }
  ch.send({{"type", "profiled"}});
  return 0;
}

} // namespace kforge::worker
