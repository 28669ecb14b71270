// kforge check PROBLEM: validate a problem and prove its machinery works: the reference
// builds at nominal precision and as the float64 oracle, passes its own verification on
// every input distribution, and the seed (if any) is verified and timed. Then the problem
// itself is screened: control kernels that are wrong on purpose must all fail.
#include "cli/commands.hpp"
#include "cli/format.hpp"
#include "bridge/torch_reference.hpp"
#include "bridge/torch_helper.hpp"
#include "eval/inputs.hpp"
#include "search/record.hpp"
#include "core/dtype.hpp"
#include "device/backend.hpp"
#include "worker/judge_keeper.hpp"
#include "worker/module_check.hpp"
#include "worker/screen.hpp"

#include <fmt/format.h>

#include <iostream>
#include <map>
#include <random>

namespace kforge::cli {
namespace {

nlohmann::json problem_summary(const problem::problem& p) {
  nlohmann::json t = nlohmann::json::array();
  for (auto& s : p.tensors)
    t.push_back({{"name", s.name},
                 {"role", s.role == problem::tensor_role::output ? "output"
                          : s.role == problem::tensor_role::param ? "param" : "input"},
                 {"dtype", dtype_name(s.dtype)},
                 {"shape", s.shape}});
  nlohmann::json cases = nlohmann::json::array();
  for (auto& c : p.cases) {
    nlohmann::json in;
    for (auto& [k, d] : c.inputs) in[k] = d.text;
    cases.push_back({{"name", c.name}, {"inputs", in}});
  }
  return {{"name", p.name},
          {"dir", p.dir.string()},
          {"backend", backend_name(p.backend)},
          {"dtype", dtype_name(p.dtype)},
          {"tensors", t},
          {"cases", cases},
          {"work", {{"flops", p.work.flops}, {"min_bytes", p.work.min_bytes}}},
          {"tolerance",
           {{"policy", p.tolerance.policy == problem::tolerance_policy::ratio ? "ratio" : "rtol"},
            {"alpha", p.tolerance.alpha},
            {"floor_ulps", p.tolerance.floor_ulps},
            {"rtol", p.tolerance.rtol},
            {"atol", p.tolerance.atol},
            {"deterministic", p.tolerance.deterministic}}},
          {"reference", p.reference.string()},
          {"seed", p.seed ? nlohmann::json(p.seed->string()) : nlohmann::json()}};
}

// The module on one trial per case (nominal and float64): on the GPU-resident path where it
// is available (worker/module_check.hpp), else through the bridge's files.
search::recorded_evaluation torch_reference_check(const problem::problem& p, const worker::evaluate_options& eo) {
  const auto& t = bridge::require_torch("checking a [torch] problem");
  std::mt19937_64 rng(eo.seed ? *eo.seed : std::random_device{}());
  search::recorded_evaluation r;
  std::string device, why;
  if (auto errors = worker::module_errors_on_device(p, eo.device, rng(), eo.worker_exe, why)) {
    r.result.reference_errors = std::move(*errors);
    device = device::describe_device(p.backend, eo.device);
  } else {
    std::vector<std::pair<int, std::vector<eval::host_tensor>>> trials;
    for (std::size_t c = 0; c < p.cases.size(); ++c)
      trials.emplace_back(static_cast<int>(c), eval::make_inputs(p, p.cases[c], rng(), eval::precision::nominal));
    auto truth = bridge::torch_truth(p, std::move(trials), eo.device, p.eval.timeout_s * 4);
    device = truth.device;
    const auto outs = p.outputs();
    for (std::size_t c = 0; c < p.cases.size(); ++c)
      for (std::size_t k = 0; k < outs.size(); ++k)
        r.result.reference_errors.push_back(
            {p.cases[c].name, outs[k]->name,
             eval::measure_reference_error(*outs[k], truth.oracle.at({static_cast<int>(c), k}),
                                           truth.reference.at({static_cast<int>(c), k}))});
  }
  r.result.status = "passed";
  double worst = 0;
  for (auto& e : r.result.reference_errors) worst = std::max(worst, e.error.rel_l2);
  r.result.message = fmt::format("the PyTorch module (torch {}, on {}) ran at {} and in float64 on all {} input "
                                 "distributions; its own relative L2 error against float64 is at most {:.3g}",
                                 t.version, device, dtype_name(p.dtype), p.cases.size(), worst);
  r.json = {{"status", "passed"}, {"passed", true}, {"message", r.result.message}, {"torch_version", t.version},
            {"device", device}, {"reference_error", worker::to_json(r.result.reference_errors)},
            {"engine", why.empty() ? nlohmann::json{{"path", "device"}} : nlohmann::json{{"path", "host"}, {"why", why}}}};
  return r;
}

} // namespace

command_fn add_check_command(CLI::App& app, global_options& g) {
  auto* sub = app.add_subcommand("check", "Validate a problem directory: parse, build the reference and oracle, "
                                          "verify the reference and the seed, screen it with control kernels");
  auto problem_dir = std::make_shared<std::string>();
  auto seed = std::make_shared<std::optional<std::uint64_t>>();
  auto no_controls = std::make_shared<bool>(false);
  sub->add_option("problem", *problem_dir, "Problem directory (holding problem.toml)")->required();
  sub->add_flag("--json", g.json, "Print the result as JSON (schema kforge.check/1, docs/json.md)");
  sub->add_option("--seed", *seed, "Fix the trial seeds");
  sub->add_flag("--no-controls", *no_controls,
                "Skip screening the problem with control kernels (zeros, input copy, constant, "
                "uninitialised, another seed's answer), each of which must fail");
  return [problem_dir, seed, no_controls, &g]() {
    const auto p = problem::load(*problem_dir);
    store::store db(g.db_path());
    worker::evaluate_options eo;
    eo.seed = *seed;
    eo.judges = std::make_shared<worker::judge_keeper>(); // the reference, seed, baselines and controls meet one judge
    nlohmann::json out{{"schema", "kforge.check/1"}, {"problem", problem_summary(p)}};

    // The reference judged as a candidate must pass: otherwise no candidate could. A
    // [torch] problem's reference is its module: it must run at the problem's dtype and in
    // float64 on every input distribution, and its own error is shown.
    eo.time = false;
    search::recorded_evaluation ref;
    if (p.torch) ref = torch_reference_check(p, eo);
    else ref = search::evaluate_and_record(db, p, p.reference, {.origin = "reference"}, eo);
    out["reference"] = ref.json;
    bool ok = ref.result.passed();
    const std::string reference_line =
        fmt::format("reference  {}: {}\n",
                    p.torch ? "PyTorch module" : ok ? "passes as its own candidate" : "FAILS as its own candidate",
                    ref.result.message);
    if (p.seed) {
      eo.time = true;
      auto s = search::evaluate_and_record(db, p, *p.seed, {.origin = "seed"}, eo);
      out["seed"] = s.json;
      ok = ok && s.result.passed();
      if (!g.json) {
        std::cout << fmt::format("problem  {} ({} backend, {}): {} tensors, {} input distributions\n", p.name,
                                 backend_name(p.backend), dtype_name(p.dtype), p.tensors.size(), p.cases.size());
        std::cout << reference_line;
        std::cout << format_evaluation(s.result, p, s.evaluation_id, "seed " + p.seed->filename().string());
      }
    } else if (!g.json) {
      std::cout << fmt::format("problem  {} ({} backend, {}): {} tensors, {} input distributions\n", p.name,
                               backend_name(p.backend), dtype_name(p.dtype), p.tensors.size(), p.cases.size());
      std::cout << reference_line;
      std::cout << (p.torch ? "seed       none (write one, or let kforge optimize with an LLM write the first candidate)\n"
                        : "seed       none (candidates start from the reference)\n");
    }
    // Baselines are judged like candidates too: a vendor call in the wrong math mode
    // (TF32 for an fp32 problem) must not become the yardstick.
    out["baselines"] = nlohmann::json::array();
    eo.time = false;
    for (auto& b : p.baselines) {
      auto r = search::evaluate_and_record(db, p, b.source, {.origin = "baseline"}, eo);
      out["baselines"].push_back(r.json);
      ok = ok && r.result.passed();
      if (!g.json)
        std::cout << fmt::format("baseline   {} {}: {}\n", b.name, r.result.passed() ? "passes" : "FAILS", r.result.message);
    }
    // Screening: wrong answers on purpose, each judged and recorded like a candidate. One
    // that passes means the problem cannot tell it from a right answer.
    out["controls"] = nullptr;
    if (!*no_controls) {
      std::map<std::string, int64_t> evaluation_ids;
      auto run = [&](const worker::control_kernel& c, const worker::evaluate_options& o) {
        auto r = search::evaluate_and_record(db, p, c.source, {.origin = "control:" + c.name}, o);
        evaluation_ids[c.name] = r.evaluation_id;
        return r.result;
      };
      const auto s = worker::screen(p, eo, run);
      out["controls"] = nlohmann::json::array();
      for (auto& c : s.controls) {
        auto j = worker::to_json(c);
        if (auto it = evaluation_ids.find(c.name); it != evaluation_ids.end()) j["evaluation_id"] = it->second;
        out["controls"].push_back(j);
        if (g.json) continue;
        const auto v = c.verdict;
        std::cout << fmt::format("control    {:<14} {}: {}\n", c.name,
                                 v == worker::control_verdict::passes ? std::string("PASSES")
                                 : v == worker::control_verdict::skipped
                                     ? std::string("skipped")
                                     : fmt::format("{} ({})", worker::verdict_name(v), c.status),
                                 c.message);
      }
      out["controls_summary"] = s.summary();
      if (!g.json) std::cout << fmt::format("controls   {}\n", s.summary());
      ok = ok && s.ok();
    }
    out["ok"] = ok;
    if (g.json) std::cout << out.dump(2) << "\n";
    else std::cout << (ok ? "check    ok\n" : "check    FAILED\n");
    return ok ? exit_ok : exit_failed;
  };
}

} // namespace kforge::cli
