// kforge suite DIR: judge (or, with --optimize, search) every problem of a directory and
// report the set the way KernelBench does: correctness, speedups over the reference (eager
// PyTorch for a [torch] problem) and over torch.compile, and fast_p (report/suite.hpp).
// One broken problem is a row of the report, never the end of the suite.
#include "cli/commands.hpp"
#include "cli/format.hpp"
#include "core/error.hpp"
#include "llm/config.hpp"
#include "core/fs.hpp"
#include "report/html_report.hpp"
#include "report/suite.hpp"
#include "search/llm_gateway.hpp"
#include "search/record.hpp"
#include "search/strategy.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <iostream>
#include <mutex>

namespace kforge::cli {

namespace {

namespace fs = std::filesystem;

/// Every immediate subdirectory of `dir` holding a problem.toml, sorted by name.
std::vector<fs::path> problem_dirs(const fs::path& dir) {
  if (!fs::is_directory(dir)) KFORGE_THROW(usage, "{}: not a directory", dir.string());
  std::vector<fs::path> out;
  for (auto& e : fs::directory_iterator(dir))
    if (e.is_directory() && fs::is_regular_file(e.path() / "problem.toml")) out.push_back(e.path());
  std::sort(out.begin(), out.end(), [](auto& a, auto& b) { return a.filename() < b.filename(); });
  if (out.empty())
    KFORGE_THROW(usage, "{}: no problems (subdirectories holding a problem.toml){}", dir.string(),
                 fs::exists(dir / "problem.toml") ? "; it is one problem: use kforge check or kforge eval" : "");
  return out;
}

struct suite_opts {
  std::string dir, candidates, strategy, config, report;
  std::vector<std::string> llm;
  bool optimize = false;
  std::optional<int> budget;
  std::optional<std::uint64_t> seed;
};

/// The search of kforge optimize on one problem, from `start` (the problem's seed, else its
/// reference, when empty); the row is the run's best passing evaluation, or its first
/// failure when none passed.
report::suite_row optimize_one(store::store& db, const problem::problem& p, const std::string& name,
                               const fs::path& start, const suite_opts& o, const std::string& strategy,
                               const std::optional<llm::llm_config>& cfg, bool progress) {
  problem::problem q = p; // the session keeps a reference: q outlives it
  if (!start.empty()) q.seed = fs::absolute(start);
  search::search_options s;
  s.strategy = strategy;
  if (o.budget) s.max_evaluations = *o.budget;
  if (o.seed) s.seed = *o.seed;
  std::shared_ptr<search::llm_gateway> gateway;
  if (cfg) {
    for (auto& m : cfg->models) s.llm.push_back(m.spec);
    gateway = search::make_llm_gateway(db, *cfg, cfg->budget, s.seed ? s.seed : 0x6b666f726765ULL);
  }
  std::mutex mu;
  nlohmann::json first_failure;
  int evaluations = 0;
  auto sink = [&](const nlohmann::json& e) {
    std::lock_guard lock(mu);
    const std::string kind = e.value("event", "");
    if (kind == "evaluation") {
      ++evaluations;
      const std::string st = e.value("status", "");
      if (first_failure.is_null() && st != "passed" && st != "not_run") first_failure = e;
    } else if (progress && kind == "best") {
      std::cerr << fmt::format("  best  {:<40} {}{}\n", e.value("label", "").substr(0, 40),
                               e["median_s"].is_number() ? format_seconds(e["median_s"].get<double>()) : "-",
                               e["speedup"].is_number() ? fmt::format("  {:.2f}x ref", e["speedup"].get<double>()) : "");
    }
  };
  search::session sess(db, q, s, sink, gateway);
  auto st = search::make_strategy(sess.options().strategy);
  search::run_search(sess, *st);
  report::suite_row r;
  if (auto best = sess.best()) {
    r = report::row_of_evaluation(name, best->doc);
    r.evaluation_id = best->evaluation_id;
  } else if (!first_failure.is_null()) {
    r.problem = name;
    r.status = first_failure.value("status", "error");
    r.message = fmt::format("no candidate passed in {} evaluations; first failure (#{}): {}", evaluations,
                            first_failure.value("evaluation_id", int64_t{0}), first_failure.value("message", ""));
    r.evaluation_id = first_failure.value("evaluation_id", int64_t{0});
  } else {
    r.problem = name;
    r.status = "error";
    r.message = fmt::format("the search judged no candidate ({} evaluations)", evaluations);
  }
  r.run_id = sess.run_id();
  return r;
}

} // namespace

command_fn add_suite_command(CLI::App& app, global_options& g) {
  auto* sub = app.add_subcommand("suite", "Judge or optimise every problem of a directory; report correctness, "
                                          "speedups over eager and torch.compile, and KernelBench's fast_p");
  auto o = std::make_shared<suite_opts>();
  sub->add_option("dir", o->dir, "Directory whose subdirectories are problems (each holding problem.toml)")->required();
  sub->add_option("--candidates", o->candidates,
                  "Directory of candidates named after the problems' directories: NAME.cu (CUDA) or NAME.cpp "
                  "(CPU); a problem without one is judged on its seed");
  auto* optimize = sub->add_flag("--optimize", o->optimize,
                                 "Search each problem as kforge optimize does (from its candidate, else its seed, "
                                 "else its reference) and report the run's best");
  sub->add_option("--budget", o->budget, "--optimize: evaluations per problem (default 40)")->needs(optimize);
  sub->add_option("--strategy", o->strategy, "--optimize: tune | refine | branch | evolve (default: branch with an LLM, tune without)")
      ->check(CLI::IsMember({"tune", "refine", "branch", "evolve"}))
      ->needs(optimize);
  sub->add_option("--llm", o->llm, "--optimize: model as provider:model[*weight] (repeatable)")->needs(optimize);
  sub->add_option("--config", o->config, "--optimize: configuration file (default: $KFORGE_CONFIG, else ./kforge.toml)")
      ->needs(optimize);
  sub->add_option("--seed", o->seed, "Fix the trial seeds (with --optimize: the strategy's random seed)");
  sub->add_flag("--json", g.json, "Print the report as JSON (schema kforge.suite/1, docs/json.md)");
  sub->add_option("--report", o->report, "Also write the suite as an HTML report to this file (as kforge report --suite)");
  return [o, &g]() {
    const auto dirs = problem_dirs(o->dir);
    const fs::path cdir = o->candidates;
    if (!o->candidates.empty() && !fs::is_directory(cdir))
      KFORGE_THROW(usage, "--candidates {}: not a directory", o->candidates);

    // Settled before the first problem runs, so that a bad flag costs nothing.
    std::optional<llm::llm_config> cfg;
    std::string strategy;
    if (o->optimize) {
      cfg = llm::find_llm_config(o->config, o->llm);
      if (cfg) search::protect_llm_keys(*cfg); // their values never reach the record
      strategy = o->strategy.empty() ? (cfg ? "branch" : "tune") : o->strategy;
      if (strategy != "tune" && !cfg)
        KFORGE_THROW(usage, "strategy '{}' needs an LLM: add [llm] models to kforge.toml or pass --llm "
                            "provider:model; without one, use --strategy tune",
                     strategy);
    }

    store::store db(g.db_path());
    worker::evaluate_options eo;
    eo.seed = o->seed;
    eo.time = true;
    std::vector<report::suite_row> rows;
    const bool progress = !g.json;
    for (std::size_t i = 0; i < dirs.size(); ++i) {
      const std::string name = dirs[i].filename().string();
      if (progress) std::cerr << fmt::format("[{}/{}] {}\n", i + 1, dirs.size(), name) << std::flush;
      report::suite_row r;
      r.problem = name;
      auto error_row = [&](const std::string& message) {
        r.status = "error";
        r.message = message;
      };
      try {
        const auto p = problem::load(dirs[i]);
        fs::path candidate;
        if (!o->candidates.empty()) {
          const auto c = cdir / (name + (p.backend == problem::backend_kind::cuda ? ".cu" : ".cpp"));
          if (fs::is_regular_file(c)) candidate = c;
        }
        if (o->optimize) {
          r = optimize_one(db, p, name, candidate, *o, strategy, cfg, progress);
        } else {
          if (candidate.empty() && p.seed) candidate = *p.seed;
          if (candidate.empty()) {
            r.status = "skipped";
            r.message = "no candidate: give --candidates DIR or a seed";
          } else {
            auto e = search::evaluate_and_record(db, p, candidate, {.origin = "suite"}, eo);
            r = report::row_of_evaluation(name, e.json);
            r.evaluation_id = e.evaluation_id;
          }
        }
        r.torch = p.torch.has_value();
        r.compile = p.torch && p.torch->compile;
      } catch (const kforge::error& e) {
        if (e.kind() == error_kind::store) throw; // the record is broken: every later problem would be too
        error_row(e.what());
      } catch (const std::exception& e) {
        error_row(std::string("internal error: ") + e.what());
      }
      if (progress)
        std::cerr << fmt::format("      {}{}\n", r.status,
                                 r.candidate_s ? fmt::format("  {}", format_seconds(*r.candidate_s)) : std::string())
                  << std::flush;
      rows.push_back(std::move(r));
    }

    auto j = report::suite_json(rows);
    j["dir"] = fs::absolute(o->dir).string();
    j["optimize"] = o->optimize;
    j["strategy"] = o->optimize ? nlohmann::json(strategy) : nlohmann::json();
    if (!o->report.empty()) {
      write_file_atomic(o->report, report::render_html(report::report_of_suite(&db, j)));
      if (progress) std::cerr << fmt::format("wrote {}\n", o->report);
    }
    if (g.json) std::cout << j.dump(2) << "\n";
    else std::cout << report::suite_table(rows);
    return exit_ok; // the suite ran; how its candidates fared is in the report
  };
}

} // namespace kforge::cli
