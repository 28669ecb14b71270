#include "worker/truth.hpp"

#include "bridge/torch_reference.hpp"
#include "core/error.hpp"
#include "eval/inputs.hpp"

namespace kforge::worker {

eval::host_tensor tensor_of(message& m) {
  return {static_cast<kf_dtype>(m.header.value("dtype", static_cast<int>(KF_F32))), std::move(m.payload)};
}

truth compute_truth(const worker_context& ctx, const role_artifacts& builds, const nlohmann::json& trials) {
  const auto& p = ctx.p;
  truth out;
  if (p.torch) {
    // A trial at a time: only one trial's inputs are ever held (1 GiB for a 4096x65536 softmax).
    for (auto& tj : trials) {
      const int t = tj["trial"];
      auto tt = bridge::torch_truth(
          p, {{t, eval::make_trial_inputs(p, tj["case"], tj["seed"], eval::precision::nominal)}}, ctx.device,
          ctx.timeout_s * 4);
      for (auto& [key, v] : tt.reference) out.reference[{key.first, 0, key.second}] = std::move(v);
      for (auto& [key, v] : tt.oracle) out.oracle[{key.first, 0, key.second}] = std::move(v);
    }
    return out;
  }
  auto w = run_worker(ctx.exe,
                      {{"role", "oracle"}, {"problem", p.dir.string()}, {"device", ctx.device},
                       {"libraries", {{"reference", builds.reference.library.string()},
                                      {"oracle", builds.oracle.library.string()}}},
                       {"trials", trials}},
                      {.timeout_s = ctx.timeout_s * 4,
                       .sink =
                           [&](message& m) {
                             if (m.header["type"] != "output") return;
                             output_key k{m.header["trial"], 0, m.header["index"]};
                             (m.header["subject"] == "oracle" ? out.oracle : out.reference)[k] = tensor_of(m);
                           },
                       .problem = &p});
  out.confinement = w.confinement;
  for (auto& m : w.messages)
    if (m.header["type"] == "error")
      KFORGE_THROW(problem, "{}: the reference failed: {}", p.reference.string(), m.header.value("message", ""));
  if (w.end != worker_end::done)
    KFORGE_THROW(problem, "{}: the reference worker {} ({}){}", p.reference.string(), worker_end_name(w.end), w.detail,
                 w.output.empty() ? "" : ":\n" + w.output.substr(0, 2000));
  return out;
}

std::vector<case_reference_error> reference_errors(const problem::problem& p, const nlohmann::json& trials,
                                                   const truth& t) {
  std::vector<case_reference_error> out;
  const auto outs = p.outputs();
  // One per case is enough: the first trials are one of each case.
  for (std::size_t i = 0; i < trials.size() && i < p.cases.size(); ++i)
    for (std::size_t k = 0; k < outs.size(); ++k)
      out.push_back({trials[i]["case"], outs[k]->name,
                     eval::measure_reference_error(*outs[k], t.oracle.at({i, 0, k}), t.reference.at({i, 0, k}))});
  return out;
}

} // namespace kforge::worker
