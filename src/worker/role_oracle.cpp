// Role "oracle": the truth of every trial, from the reference at the problem's dtype and
// in double. It never loads candidate code, so nothing a candidate does can change the truth.
#include "worker/roles.hpp"

#include "eval/inputs.hpp"

#include <fmt/format.h>

#include <tuple>
#include <variant>

namespace kforge::worker {

int run_oracle(channel_writer& ch, const problem::problem& p, const nlohmann::json& job, device::backend& dev) {
  auto libs = load_reference_and_oracle(ch, job, p, dev);
  if (!libs) return 0;
  auto& [r, o] = *libs;
  eval::tensor_set rs(dev, p, eval::precision::nominal, 1), os(dev, p, eval::precision::oracle, 2);
  bool sized = false;
  for (auto& tj : job["trials"]) {
    const trial t = trial_of(tj);
    const auto nominal = eval::make_trial_inputs(p, t.case_name, t.seed, eval::precision::nominal);
    rs.upload_inputs(nominal);
    os.upload_inputs(eval::widen_to_oracle(p, nominal));
    if (!sized) {
      rs.set_workspace(workspace_size(r, rs), 3);
      os.set_workspace(workspace_size(o, os), 4);
      sized = true;
    }
    for (auto [lib, ts, subject] : {std::tuple{&r, &rs, "reference"}, std::tuple{&o, &os, "oracle"}}) {
      ts->poison(0);
      ch.send({{"type", "progress"}, {"subject", subject}, {"trial", t.index}});
      const int rc = lib->forward(&ts->args());
      dev.synchronize();
      if (rc != 0) {
        ch.send({{"type", "error"}, {"reason", "returned_error"},
                 {"message", fmt::format("the {} failed on case '{}': {}", subject, t.case_name,
                                         returned_message(*lib, rc))}});
        return 0;
      }
      send_outputs(ch, ts->download_outputs(), subject, t.index, 0);
    }
  }
  return 0;
}

} // namespace kforge::worker
