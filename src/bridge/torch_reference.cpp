#include "bridge/torch_reference.hpp"

#include "bridge/safetensors.hpp"
#include "bridge/torch_helper.hpp"
#include "core/dtype.hpp"
#include "core/error.hpp"
#include "eval/inputs.hpp"

#include <fmt/format.h>

#include <random>

namespace kforge::bridge {
namespace {

// The inputs' bytes are moved, not copied: a trial's inputs can be a gigabyte.
std::vector<named_tensor> named(const problem::problem& p, const std::string& prefix,
                                std::vector<eval::host_tensor> inputs) {
  std::vector<named_tensor> out;
  const auto specs = p.inputs();
  KFORGE_ASSERT(specs.size() == inputs.size());
  for (std::size_t i = 0; i < specs.size(); ++i)
    out.push_back({prefix + specs[i]->name, inputs[i].dtype, specs[i]->shape, std::move(inputs[i].bytes)});
  return out;
}

} // namespace

std::string torch_device(const problem::problem& p, int device_index) {
  return p.backend == problem::backend_kind::cuda ? fmt::format("cuda:{}", device_index) : "cpu";
}

nlohmann::json torch_request(const problem::problem& p) {
  nlohmann::json forward = nlohmann::json::array(), params = nlohmann::json::array(), abi = nlohmann::json::array(),
                 outputs = nlohmann::json::array();
  for (auto* t : p.inputs()) {
    abi.push_back(t->name);
    if (t->role == problem::tensor_role::param) params.push_back({t->name, t->torch_name});
    else forward.push_back(t->name);
  }
  for (auto* t : p.outputs())
    outputs.push_back({{"name", t->name}, {"dtype", dtype_name(t->dtype)}, {"shape", t->shape},
                       {"follows_real", t->follows_real}});
  return {{"model", p.torch ? p.torch->module.string() : ""}, {"init_inputs", p.torch ? p.torch->init_inputs : "[]"},
          {"inputs", forward},
          {"params", params},  {"outputs", outputs},   {"abi_inputs", abi},
          {"abi_outputs", outputs}, {"dtype", dtype_name(p.dtype)},
          {"scalars", p.torch ? p.torch->scalars : std::vector<std::string>{}}};
}

torch_truth_result torch_truth(const problem::problem& p, std::vector<std::pair<int, std::vector<eval::host_tensor>>> trials,
                               int device_index, double timeout_s, bool with_oracle) {
  // One helper call per trial: the files and the memory they take stay one trial's size
  // (a 4096 x 65536 softmax is 1 GiB in, 3 GiB out per trial), and the helper persists.
  torch_truth_result r;
  const auto outs = p.outputs();
  for (auto& [t, inputs] : trials) {
    const scratch_dir dir("truth"); // gone when this trial is read, before any candidate runs
    // Moved into the file and freed: not held while the module runs.
    write_safetensors(dir / "inputs.safetensors", named(p, fmt::format("{}/", t), std::move(inputs)));
    auto req = torch_request(p);
    req["inputs_file"] = (dir / "inputs.safetensors").string();
    req["outputs_file"] = (dir / "outputs.safetensors").string();
    req["trials"] = nlohmann::json::array({t});
    req["device"] = torch_device(p, device_index);
    if (!with_oracle) req["reference_only"] = true;
    auto answer = call_helper("run", req, timeout_s);
    r.device = answer.value("device_name", "");
    std::map<std::string, named_tensor> by_name;
    for (auto& x : read_safetensors(dir / "outputs.safetensors")) by_name[x.name] = std::move(x);
    for (std::size_t k = 0; k < outs.size(); ++k)
      for (const bool oracle : {false, true}) {
        if (oracle && !with_oracle) continue;
        const std::string key = fmt::format("{}/{}/{}", t, oracle ? "oracle" : "reference", outs[k]->name);
        auto it = by_name.find(key);
        if (it == by_name.end())
          KFORGE_THROW(problem, "{}: the module gave no '{}' (trial {})", p.torch->module.string(), outs[k]->name, t);
        const kf_dtype want = oracle ? outs[k]->oracle_dtype() : outs[k]->dtype;
        const auto n = static_cast<std::size_t>(outs[k]->numel());
        if (it->second.dtype != want || it->second.bytes.size() != n * dtype_size(want))
          KFORGE_THROW(problem,
                       "{}: output '{}' of the module has {} elements of {}; the problem declares shape [{}] "
                       "of {} ({} elements)",
                       p.torch->module.string(), outs[k]->name, it->second.bytes.size() / dtype_size(it->second.dtype),
                       dtype_name(it->second.dtype), fmt::join(outs[k]->shape, ", "), dtype_name(want), n);
        (oracle ? r.oracle : r.reference)[{t, k}] = {want, std::move(it->second.bytes)};
      }
  }
  return r;
}

std::vector<std::pair<std::string, std::uint64_t>> torch_rotations(const problem::problem& p,
                                                                   const torch_timing_config& cfg) {
  std::mt19937_64 rng(cfg.seed);
  std::vector<std::pair<std::string, std::uint64_t>> out;
  for (int r = 0; r < cfg.rotations; ++r) out.emplace_back(p.cases[r % p.cases.size()].name, rng());
  return out;
}

nlohmann::json torch_time_request(const problem::problem& p, const std::vector<torch_subject>& subjects,
                                  const torch_timing_config& cfg, int device_index) {
  auto req = torch_request(p);
  req["device"] = torch_device(p, device_index);
  req["rotations"] = cfg.rotations;
  req["timing"] = {{"budget_s", cfg.budget_s}, {"warmup", cfg.warmup}, {"min_samples", cfg.min_samples},
                   {"max_samples", cfg.max_samples}, {"target_rel_ci", cfg.target_rel_ci}};
  req["subjects"] = nlohmann::json::array();
  for (auto& s : subjects) req["subjects"].push_back({{"name", s.name}, {"kind", s.kind}, {"path", s.library}});
  return req;
}

std::vector<torch_timing> torch_timings_of(const nlohmann::json& answer) {
  std::vector<torch_timing> out;
  for (auto& s : answer.value("subjects", nlohmann::json::array()))
    out.push_back({s.value("name", ""), s.value("samples", std::vector<double>{}), s.value("error", "")});
  return out;
}

std::vector<torch_timing> torch_time(const problem::problem& p, const std::vector<torch_subject>& subjects,
                                     const torch_timing_config& cfg, int device_index, double timeout_s) {
  const scratch_dir dir("time");
  std::vector<named_tensor> all;
  int r = 0;
  for (auto& [case_name, seed] : torch_rotations(p, cfg)) {
    for (auto& n : named(p, fmt::format("{}/", r++), eval::make_trial_inputs(p, case_name, seed, eval::precision::nominal)))
      all.push_back(std::move(n));
  }
  write_safetensors(dir / "inputs.safetensors", all);
  auto req = torch_time_request(p, subjects, cfg, device_index);
  req["inputs_file"] = (dir / "inputs.safetensors").string();
  return torch_timings_of(call_helper("time", req, timeout_s));
}

} // namespace kforge::bridge
