// kforge eval PROBLEM CANDIDATE: build, verify and time one candidate; record it.
#include "cli/commands.hpp"
#include "cli/format.hpp"
#include "search/record.hpp"
#include "core/error.hpp"

#include <iostream>

namespace kforge::cli {

command_fn add_eval_command(CLI::App& app, global_options& g) {
  auto* sub = app.add_subcommand("eval", "Verify a candidate against the float64 oracle and time it against the reference");
  struct opts_t {
    std::string problem, candidate;
    std::optional<std::uint64_t> seed;
    int trials = 0;
    double budget = 0, timeout = 0;
    bool no_time = false, sanitize = false;
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
  return [o, &g]() {
    const auto p = problem::load(o->problem);
    if (!std::filesystem::exists(o->candidate)) KFORGE_THROW(usage, "{}: candidate file not found", o->candidate);
    store::store db(g.db_path());
    worker::evaluate_options eo;
    eo.seed = o->seed;
    eo.trials_per_case = o->trials;
    eo.time = !o->no_time;
    eo.time_budget_s = o->budget;
    eo.timeout_s = o->timeout;
    eo.sanitize = o->sanitize;
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
    if (g.json) std::cout << r.json.dump(2) << "\n";
    else std::cout << format_evaluation(r.result, p, r.evaluation_id, o->candidate);
    return r.result.passed() ? exit_ok : exit_failed;
  };
}

} // namespace kforge::cli
