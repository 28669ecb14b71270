// What the worker's roles share (roles.hpp).
#include "worker/roles.hpp"

#include <fmt/format.h>

#include <variant>

namespace kforge::worker {

trial trial_of(const nlohmann::json& tj) { return {tj["case"], tj["seed"], tj["trial"]}; }

void send_outputs(channel_writer& ch, const std::vector<eval::host_tensor>& outs, const std::string& subject, int t,
                  int run) {
  for (std::size_t k = 0; k < outs.size(); ++k)
    ch.send({{"type", "output"}, {"subject", subject}, {"trial", t}, {"run", run}, {"index", k},
             {"dtype", static_cast<int>(outs[k].dtype)}},
            outs[k].bytes.data(), outs[k].bytes.size());
}

std::optional<std::pair<kernel_library, kernel_library>>
load_reference_and_oracle(channel_writer& ch, const nlohmann::json& job, const problem::problem& p) {
  auto ref = load_kernel(job["libraries"]["reference"], p);
  auto orc = load_kernel(job["libraries"]["oracle"], p);
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
