// kforge eval PROBLEM CANDIDATE: build, verify and time one candidate; record it.
#include "bridge/torch_helper.hpp"
#include "bridge/torch_reference.hpp"
#include "build/compiler.hpp"
#include "cli/commands.hpp"
#include "cli/format.hpp"
#include "cli/progress.hpp"
#include "search/record.hpp"
#include "core/error.hpp"
#include "core/text.hpp"
#include "eval/result.hpp"
#include "eval/statistics.hpp"

#include <iostream>

#include <unistd.h>

namespace kforge::cli {
namespace {

// The same library timed by kforge's worker (in the evaluation) and by the bridge's Python
// timer: their medians agree when the two protocols do, which is what makes eager and
// torch.compile times comparable with a candidate's.
nlohmann::json torch_parity(const problem::problem& p, const std::filesystem::path& source, const worker::evaluation& ev,
                            const worker::evaluate_options& eo) {
  const auto* c = ev.timing("candidate");
  if (!c) return {{"skipped", "the candidate was not timed (it failed, or --no-time)"}};
  std::filesystem::path lib;
  for (auto& b : ev.builds)
    if (b.role == "candidate") lib = b.artifact.library;
  if (lib.empty() || build::toolchain_for(source, p.backend == problem::backend_kind::cuda ? build::problem_backend::cuda
                                                                                        : build::problem_backend::cpu) == "nvrtc")
    return {{"skipped", "the candidate is not a kf_forward library (kernel-only candidates have no ABI entry point)"}};
  if (const auto& t = bridge::torch_probe(); !t.available) return {{"skipped", t.why}};
  bridge::torch_timing_config tc{.budget_s = eo.time_budget_s > 0 ? eo.time_budget_s : p.eval.time_budget_s,
                                 .min_samples = p.eval.min_samples, .max_samples = p.eval.max_samples,
                                 .target_rel_ci = p.eval.target_rel_ci};
  auto t = bridge::torch_time(p, {{"candidate", "library", lib.string()}}, tc, ev.device_index < 0 ? 0 : ev.device_index,
                              p.eval.timeout_s + 600);
  if (t.empty() || !t[0].error.empty() || t[0].samples.empty())
    return {{"skipped", t.empty() ? "no answer" : t[0].error.empty() ? "no samples" : t[0].error}};
  auto s = eval::summarize("candidate", t[0].samples, p.eval.target_rel_ci);
  return {{"kforge", eval::to_json(*c)}, {"torch", eval::to_json(s)}, {"ratio", s.median_s / c->median_s},
          {"torch_version", bridge::torch_probe().version}};
}

std::string format_parity(const nlohmann::json& j) {
  if (j.contains("skipped")) return fmt::format("  parity   skipped: {}\n", j["skipped"].get<std::string>());
  return fmt::format("  parity   kforge's timer {:.4g} ms (CI {:.2g}%), the PyTorch bridge's {:.4g} ms (CI {:.2g}%): "
                     "ratio {:.3f}\n",
                     j["kforge"]["median_s"].get<double>() * 1e3, j["kforge"]["ci_rel"].get<double>() * 100,
                     j["torch"]["median_s"].get<double>() * 1e3, j["torch"]["ci_rel"].get<double>() * 100,
                     j["ratio"].get<double>());
}

} // namespace

command_fn add_eval_command(CLI::App& app, global_options& g) {
  auto* sub = app.add_subcommand("eval", "Verify a candidate against the float64 oracle and time it against the reference");
  struct opts_t {
    std::string problem, candidate;
    std::optional<std::uint64_t> seed;
    int trials = 0;
    double budget = 0, timeout = 0;
    bool no_time = false, sanitize = false, parity = false;
    std::string hypothesis, predict;
    std::vector<std::string> params;
  };
  auto o = std::make_shared<opts_t>();
  sub->add_option("problem", o->problem, "Problem directory (holding problem.toml)")->required();
  sub->add_option("candidate", o->candidate, "Candidate source file")->required();
  sub->add_flag("--json", g.json, "Print the result as JSON (schema kforge.eval/1, docs/json.md)");
  sub->add_option("--seed", o->seed, "Fix the trial seeds (to reproduce a failure); default: fresh randomness");
  sub->add_option("--trials", o->trials, "Trials per input distribution (default: the problem's)");
  sub->add_option("--time-budget", o->budget, "Seconds of timing (default: the problem's)");
  sub->add_option("--timeout", o->timeout, "Watchdog seconds per worker (default: the problem's)");
  sub->add_flag("--no-time", o->no_time, "Verify only");
  sub->add_option("--param", o->params, "NAME=VALUE for a parameter the candidate declares (repeatable; others at their defaults)");
  sub->add_option("--hypothesis", o->hypothesis, "What this candidate tests, for the experiment log (kforge log)");
  sub->add_option("--predict", o->predict, "The time you expect, e.g. 0.8ms, 120us or 0.0008 (seconds)");
  sub->add_flag("--sanitize", o->sanitize,
                "After verification passes, run compute-sanitizer (memcheck, racecheck, initcheck, synccheck) at the "
                "problem's [sanitize] shapes; any error fails the candidate (CUDA problems)");
  sub->add_flag("--torch-parity", o->parity,
                "Also time the candidate's library through the PyTorch bridge's timer (python/kforge_torch.py) and "
                "print both medians: the check that eager/torch.compile times are comparable with kforge's");
  return [o, &g]() {
    const auto p = problem::load(o->problem);
    // A candidate is a source file; its name and bytes are anything the file system allows
    // (they are handled as bytes, and shown with stray bytes as \xHH).
    const std::string shown = printable_path(o->candidate);
    std::error_code ec;
    const auto st = std::filesystem::status(o->candidate, ec);
    if (!std::filesystem::exists(st)) KFORGE_THROW(usage, "{}: candidate file not found", shown);
    if (std::filesystem::is_directory(st)) KFORGE_THROW(usage, "{} is a directory, not a candidate source file", shown);
    if (!std::filesystem::is_regular_file(st))
      KFORGE_THROW(usage, "{} is not a regular file; give the candidate's source file", shown);
    store::store db(g.db_path());
    worker::evaluate_options eo;
    eo.seed = o->seed;
    eo.trials_per_case = o->trials;
    eo.time = !o->no_time;
    eo.time_budget_s = o->budget;
    eo.timeout_s = o->timeout;
    eo.sanitize = o->sanitize;
    // Its phases as they happen, on stderr (stdout keeps the verdict); nothing with --json.
    phase_printer show(std::cerr, isatty(STDERR_FILENO));
    if (!g.json) eo.observer.on_phase = show.callback();
    search::provenance from{.origin = "file", .hypothesis = o->hypothesis};
    if (!o->predict.empty()) from.predicted_s = parse_seconds(o->predict);
    for (auto& kv : o->params) {
      const auto eq = kv.find('=');
      try {
        if (eq == std::string::npos || eq == 0) throw std::invalid_argument(kv);
        std::size_t used = 0;
        const auto v = std::stoll(kv.substr(eq + 1), &used);
        if (used != kv.size() - eq - 1) throw std::invalid_argument(kv);
        from.params[kv.substr(0, eq)] = v;
      } catch (const std::exception&) {
        KFORGE_THROW(usage, "--param '{}': write NAME=INTEGER, e.g. --param BLOCK=128", kv);
      }
    }
    auto r = search::evaluate_and_record(db, p, o->candidate, from, eo);
    if (o->parity) r.json["torch_parity"] = torch_parity(p, o->candidate, r.result, eo);
    // What is printed is scrubbed of secrets like what is stored (the result already is;
    // this covers what was added since), and is valid UTF-8 JSON whatever the candidate printed.
    if (g.json) {
      std::cout << scrub_secrets_json(r.json.dump(2, ' ', false, nlohmann::json::error_handler_t::replace)) << "\n";
    } else {
      std::string text = format_evaluation(r.result, p, r.evaluation_id, shown);
      if (o->parity) text += format_parity(r.json["torch_parity"]);
      std::cout << scrub_secrets(text);
    }
    return r.result.passed() ? exit_ok : exit_failed;
  };
}

} // namespace kforge::cli
