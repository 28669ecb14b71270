// kforge optimize PROBLEM: a budgeted search for a faster candidate (search/strategy.hpp).
#include "cli/commands.hpp"
#include "cli/format.hpp"
#include "cli/progress.hpp"
#include "core/error.hpp"
#include "llm/config.hpp"
#include "search/llm_gateway.hpp"
#include "search/record.hpp"
#include "propose/prompt.hpp"
#include "search/strategy.hpp"

#include <chrono>
#include <iostream>
#include <mutex>

#include <unistd.h>

namespace kforge::cli {

namespace {

// A progress line on a terminal is rewritten in place; any other line first clears it.
bool g_progress_shown = false;

void clear_progress() {
  if (!g_progress_shown) return;
  std::cout << "\r\033[K";
  g_progress_shown = false;
}

/// The ticker's line: rewritten in place on a terminal, a plain line otherwise.
void show_progress(const std::string& line) {
  if (isatty(STDOUT_FILENO)) {
    std::cout << "\r\033[K" << line << std::flush;
    g_progress_shown = true;
  } else {
    std::cout << line << "\n" << std::flush;
  }
}

// One line per round and per new best, for a person watching the terminal.
void print_event(const nlohmann::json& e) {
  const std::string kind = e.value("event", "");
  if (kind == "llm_progress") {
    if (isatty(STDOUT_FILENO)) // a log file gets the rounds, not a ticker
      show_progress(fmt::format("  llm      {} call{} streaming  {} tokens  {:.1f} tokens/s  {:.0f} s", e.value("calls", 1),
                                e.value("calls", 1) == 1 ? "" : "s", e.value("tokens", 0), e.value("tokens_per_s", 0.0),
                                e.value("elapsed_s", 0.0)));
    return;
  }
  clear_progress();
  auto ms = [](const nlohmann::json& v) { return v.is_number() ? format_seconds(v.get<double>()) : std::string("-"); };
  if (kind == "run") {
    std::cout << fmt::format("run {}  {} {} on {} ({} device lane{})\n", e["run"].get<int64_t>(),
                             e.value("resumed", false) ? "resuming" : "optimizing", e.value("problem", ""),
                             e.value("device", ""), e.value("devices", 1), e.value("devices", 1) == 1 ? "" : "s");
  } else if (kind == "best") {
    std::cout << fmt::format("  best     {:<40} {}  {}\n", e.value("label", "").substr(0, 40), ms(e["median_s"]),
                             e["speedup"].is_number() ? fmt::format("{:.2f}x ref", e["speedup"].get<double>()) : "");
  } else if (kind == "round") {
    std::string line = fmt::format("round {:<3} best {}", e.value("round", 0), ms(e.value("best_median_s", nlohmann::json())));
    if (e.contains("speedup")) line += fmt::format("  {:.2f}x ref", e["speedup"].get<double>());
    if (e.contains("roofline_fraction")) line += fmt::format("  {:.0f}% roofline", 100 * e["roofline_fraction"].get<double>());
    line += fmt::format("  evals {}  tokens {}{}", e.value("evaluations", 0), e.value("tokens", 0),
                        e.contains("tokens_estimated_calls")
                            ? fmt::format(" (estimated for {} calls: no counts from the server)",
                                          e["tokens_estimated_calls"].get<int64_t>())
                            : "");
    if (e.value("cost_usd", 0.0) > 0) line += fmt::format("  ${:.3f}", e["cost_usd"].get<double>());
    if (!e.value("note", "").empty()) line += "  (" + e["note"].get<std::string>() + ")";
    std::cout << line << "\n";
  } else if (kind == "idea") {
    std::cout << fmt::format("  idea     r{} {}\n", e.value("round", 0), e.value("title", ""));
  } else if (kind == "note") {
    std::cout << "  note     " << e.value("message", "") << "\n";
  } else if (kind == "warning") {
    std::cout << "  warning  " << e.value("message", "") << "\n";
  } else if (kind == "proposal" && e.value("status", "") != "ok") {
    // Why an answer gave no candidate: a failed call, or no usable code in it.
    std::cout << fmt::format("  {:<8} {} {}\n", e.value("status", "") == "llm_error" ? "llm" : "answer",
                             e.value("label", ""), e.value("message", "").substr(0, 300));
  } else if (kind == "sanitize_failed") {
    std::cout << "  rejected " << e.value("message", "") << "\n";
  } else if (kind == "stopped") {
    std::cout << fmt::format("stopped: {}\n", e.value("reason", ""));
  }
  std::cout.flush();
}

} // namespace

command_fn add_optimize_command(CLI::App& app, global_options& g) {
  auto* sub = app.add_subcommand("optimize", "Search for a faster candidate: tune, refine or branch, within budgets");
  struct opts_t {
    std::string problem, config, strategy;
    std::vector<std::string> llm;
    std::string base_url;
    search::search_options s;
    std::optional<int64_t> resume;
    std::optional<std::uint64_t> seed;
  };
  auto o = std::make_shared<opts_t>();
  sub->add_option("problem", o->problem, "Problem directory (holding problem.toml)")->required();
  sub->add_option("--strategy", o->strategy, "tune | refine | branch | evolve (default: branch with an LLM, tune without)")
      ->check(CLI::IsMember({"tune", "refine", "branch", "evolve"}));
  sub->add_option("--dialect", o->s.dialect,
                  "What the LLM writes: cuda | cute | cpp | triton | torch-cuda (ModelNew files with Triton or "
                  "load_inline; default: the problem's backend)");
  sub->add_option("--llm", o->llm, "Model as provider:model[*weight] (repeatable; replaces kforge.toml's models)");
  sub->add_option("--base-url", o->base_url,
                  "Send every model's calls to this server, e.g. http://127.0.0.1:8080/v1 (default: kforge.toml's "
                  "base_url, else $OPENAI_BASE_URL / $ANTHROPIC_BASE_URL)");
  sub->add_option("--config", o->config, "Configuration file (default: $KFORGE_CONFIG, else ./kforge.toml)");
  sub->add_option("--resume", o->resume, "Continue run RUN from the database, nothing lost or repeated");
  sub->add_option("--seed", o->seed, "The strategy's random seed (default: fresh, then stored with the run)");
  sub->add_option("--evaluations", o->s.max_evaluations, "Budget: evaluations (default 40; 0: none)");
  sub->add_option("--tokens", o->s.max_tokens, "Budget: LLM tokens, input + output (0: none)");
  sub->add_option("--cost", o->s.max_cost_usd, "Budget: LLM cost in USD (needs [llm.prices]; 0: none)");
  sub->add_option("--wall", o->s.max_wall_s, "Budget: wall seconds (0: none)");
  sub->add_option("--target", o->s.target_fraction, "Stop at this fraction of the roofline (needs kforge calibrate)");
  sub->add_option("--patience", o->s.patience, "Stop after this many rounds without gain (default 3)");
  sub->add_option("--rounds", o->s.max_rounds, "At most this many LLM rounds, not counting the seed's round 0 (default 8)");
  sub->add_option("--tune-method", o->s.tune_method, "grid | random | model | auto")
      ->check(CLI::IsMember({"grid", "random", "model", "auto"}));
  sub->add_option("--tune-budget", o->s.tune_budget, "Evaluations to tune each LLM candidate that declares parameters");
  sub->add_option("--ideas", o->s.ideas, "branch: ideas per round (N)");
  sub->add_option("--implementations", o->s.implementations, "branch: implementations per idea (B); evolve: children per island per round");
  sub->add_option("--islands", o->s.islands, "evolve: islands, each with its own archive (default 2)");
  sub->add_option("--migrate-every", o->s.migrate_every, "evolve: rounds between migrations of each island's best (default 3)");
  sub->add_option("--keep", o->s.keep, "branch: best candidates seeding the next round (K)");
  sub->add_option("--max-fixes", o->s.max_fixes, "refine: fix attempts after a failure (F)");
  sub->add_option("--devices", o->s.devices, "Device lanes (default: every visible GPU)");
  sub->add_option("--build-jobs", o->s.build_jobs, "Concurrent builds (default: CPU count)");
  sub->add_option("--trials", o->s.trials, "Trials per input distribution (default: the problem's)");
  sub->add_option("--time-budget", o->s.time_budget_s, "Timing seconds per subject (default: the problem's)");
  sub->add_flag("--json", g.json, "Print events as JSON lines (kforge.optimize-event/1, docs/json.md)");
  return [o, &g]() {
    const auto p = problem::load(o->problem);
    store::store db(g.db_path());
    auto s = o->s;
    s.resume_run = o->resume;
    if (o->seed) s.seed = *o->seed;

    // The LLM, when configured: kforge.toml's [llm] and/or --llm.
    auto cfg = llm::find_llm_config(o->config, o->llm);
    if (!o->base_url.empty()) {
      if (!cfg)
        KFORGE_THROW(usage, "--base-url {} needs a model to ask there: add --llm openai:MODEL (the name the server "
                     "serves; `kforge llm ping --base-url {} --llm openai:MODEL` checks it)",
                     o->base_url, o->base_url);
      cfg->base_url = llm::checked_base_url(o->base_url, "--base-url");
    }
    if (cfg) search::protect_llm_keys(*cfg); // their values never reach the record
    const bool have_llm = cfg.has_value();
    if (o->resume) {
      auto run = db.get_run(*o->resume);
      if (!run) KFORGE_THROW(usage, "{}: no run {} (kforge show runs lists them)", g.db_path().string(), *o->resume);
      s.strategy = run->strategy;
    } else {
      s.strategy = o->strategy.empty() ? (have_llm ? "branch" : "tune") : o->strategy;
    }
    if (s.strategy != "tune" && !have_llm)
      KFORGE_THROW(usage, "strategy '{}' needs an LLM: add [llm] models to kforge.toml or pass --llm provider:model "
                          "(replay:TRANSCRIPT replays a recorded run); without one, use --strategy tune",
                   s.strategy);
    if (have_llm)
      for (auto& m : cfg->models) s.llm.push_back(m.spec);
    if (!s.dialect.empty() && !o->resume) {
      if (!propose::is_dialect(s.dialect))
        KFORGE_THROW(usage, "--dialect {}: unknown (cuda, cute, cpp, triton or torch-cuda)", s.dialect);
      const bool cuda = p.backend == problem::backend_kind::cuda;
      if (cuda == (s.dialect == "cpp"))
        KFORGE_THROW(usage, "--dialect {} does not fit {}, a {} problem ({})", s.dialect, p.toml_path.string(),
                     cuda ? "CUDA" : "CPU", cuda ? "cuda, cute, triton or torch-cuda" : "cpp");
    }

    std::mutex out_mu;
    std::chrono::steady_clock::time_point last_json_progress{};
    search_ticker ticker(s); // replaced by the session's own options (a resumed run's) below
    auto sink = [&](const nlohmann::json& e) {
      std::lock_guard lock(out_mu);
      if (g.json) {
        // An agent polling the stream wants a sign of life, not a ticker: one every 10 s.
        if (e.value("event", "") == "llm_progress") {
          const auto now = std::chrono::steady_clock::now();
          if (now - last_json_progress < std::chrono::seconds(10)) return;
          last_json_progress = now;
        }
        std::cout << e.dump() << "\n" << std::flush;
      } else {
        print_event(e);
        if (auto line = ticker.on_event(e)) show_progress(*line);
      }
    };
    // Warnings from the LLM layer (a server that cuts streams under load) join the events.
    llm::set_warning_sink([&](const std::string& m) {
      sink({{"schema", "kforge.optimize-event/1"}, {"event", "warning"}, {"message", m}});
    });
    struct unhook {
      ~unhook() { llm::set_warning_sink({}); }
    } unhook_;
    std::shared_ptr<search::llm_gateway> gateway;
    if (have_llm) {
      llm::budget b = cfg->budget;
      if (s.max_tokens > 0) b.max_tokens = s.max_tokens;
      if (s.max_cost_usd > 0) b.max_cost_usd = s.max_cost_usd;
      store::llm_totals prior;
      if (o->resume) prior = db.llm_totals_of(*o->resume);
      gateway = search::make_llm_gateway(db, *cfg, b, s.seed ? s.seed : 0x6b666f726765ULL, prior);
    }
    search::session sess(db, p, s, sink, gateway);
    {
      std::lock_guard lock(out_mu);
      ticker = search_ticker(sess.options());
    }
    auto st = search::make_strategy(sess.options().strategy);
    search::run_search(sess, *st);
    auto best = sess.best();
    if (!g.json) {
      clear_progress();
      if (best)
        std::cout << fmt::format("best: candidate #{} {} {}{}  (kforge show run {}; kforge report {}; kforge export {})\n",
                                 best->candidate_id, best->label, format_seconds(*best->median_s),
                                 best->speedup ? fmt::format(", {:.2f}x the reference", *best->speedup) : "",
                                 sess.run_id(), sess.run_id(), sess.run_id());
      else
        std::cout << fmt::format("no candidate passed (kforge show run {}; kforge report {})\n", sess.run_id(),
                                 sess.run_id());
    }
    return best ? exit_ok : exit_failed;
  };
}

} // namespace kforge::cli
