// kforge show [EVALUATION | runs | run N]: the experiment record: recent evaluations, or
// one in full; the runs of kforge optimize, or one run in full (report/run_report.hpp).
#include "cli/commands.hpp"
#include "cli/format.hpp"
#include "core/error.hpp"
#include "report/run_report.hpp"
#include "store/store.hpp"

#include <charconv>
#include <iostream>

namespace kforge::cli {

namespace {

/// What the positional words ask for.
struct show_target {
  enum kind_t { evaluations, evaluation, runs, run } kind = evaluations;
  int64_t id = 0;
};

std::optional<int64_t> positive_integer(const std::string& s) {
  int64_t v = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (s.empty() || ec != std::errc() || end != s.data() + s.size() || v <= 0) return std::nullopt;
  return v;
}

show_target parse_target(const std::vector<std::string>& words) {
  constexpr const char* forms = "give an evaluation id (kforge show 12), 'runs' (kforge show runs), or a run "
                                "(kforge show run 7, r7 or run:7); nothing lists recent evaluations";
  if (words.empty()) return {};
  if (words.size() == 1) {
    const auto& w = words[0];
    if (auto id = positive_integer(w)) return {show_target::evaluation, *id};
    if (w == "runs") return {show_target::runs, 0};
    if (w == "run") KFORGE_THROW(usage, "show run: which run? (kforge show run 7; kforge show runs lists them)");
    if (auto id = report::parse_run_ref(w)) return {show_target::run, *id};
  } else if (words.size() == 2 && words[0] == "run") {
    if (auto id = positive_integer(words[1])) return {show_target::run, *id};
    KFORGE_THROW(usage, "show run {}: a run id is a positive integer (kforge show runs lists them)", words[1]);
  }
  std::string all;
  for (auto& w : words) all += (all.empty() ? "" : " ") + w;
  KFORGE_THROW(usage, "show {}: cannot tell what to show; {}", all, forms);
}

} // namespace

command_fn add_show_command(CLI::App& app, global_options& g) {
  auto* sub = app.add_subcommand(
      "show", "Show recorded evaluations (a list, or one by id) and optimize runs ('runs', or 'run N')");
  struct opts_t {
    std::vector<std::string> what;
    std::string problem;
    int limit = 20;
    bool source = false;
  };
  auto o = std::make_shared<opts_t>();
  sub->add_option("what", o->what,
                  "Evaluation id; 'runs' for the list of runs; 'run N' (or rN, run:N) for one run; "
                  "omit for a list of recent evaluations");
  sub->add_option("--problem", o->problem, "Only this problem's evaluations (or runs)");
  sub->add_option("--limit", o->limit, "How many to list")->check(CLI::PositiveNumber);
  sub->add_flag("--source", o->source, "Also print the candidate's source (a run's: its best's)");
  sub->add_flag("--json", g.json,
                "Print as JSON (schemas kforge.show-list/1, kforge.eval/1, kforge.show-runs/1, kforge.run/1; "
                "docs/json.md)");
  return [o, &g]() {
    const auto target = parse_target(o->what);
    if (!std::filesystem::exists(g.db_path()))
      KFORGE_THROW(usage, "{}: no experiment database here yet (run kforge eval first, or pass --db)",
                   g.db_path().string());
    store::store db(g.db_path());
    if (target.kind == show_target::runs) {
      auto runs = db.list_runs(o->problem.empty() ? o->limit : 0);
      if (!o->problem.empty()) {
        std::erase_if(runs, [&](const store::run_record& r) { return r.problem != o->problem; });
        if (runs.size() > static_cast<std::size_t>(o->limit)) runs.resize(o->limit);
      }
      if (g.json) std::cout << json_text(report::runs_json(runs, &db)) << "\n";
      else std::cout << report::runs_text(runs, &db);
      return exit_ok;
    }
    if (target.kind == show_target::run) {
      if (!db.get_run(target.id)) KFORGE_THROW(usage, "{}: no run {}", g.db_path().string(), target.id);
      auto j = report::run_json(db, target.id);
      std::optional<store::candidate_record> best;
      if (o->source && j["best"].is_object()) best = db.get_candidate(j["best"]["candidate_id"].get<int64_t>());
      if (g.json) {
        if (best) j["best"]["source"] = best->source;
        std::cout << json_text(j) << "\n";
        return exit_ok;
      }
      std::cout << report::run_text(j);
      if (best) std::cout << "\n" << best->source;
      return exit_ok;
    }
    if (target.kind == show_target::evaluations) {
      auto rows = db.list_evaluations(o->problem, o->limit);
      if (g.json) {
        nlohmann::json j{{"schema", "kforge.show-list/1"}, {"evaluations", nlohmann::json::array()}};
        for (auto& r : rows) {
          nlohmann::json e{{"id", r.id},           {"problem", r.problem},   {"candidate_id", r.candidate_id},
                           {"candidate", r.candidate_label}, {"hash", r.candidate_hash}, {"status", r.status},
                           {"message", r.message}, {"started_at", r.started_at}};
          e["candidate_median_s"] = r.candidate_median_s ? nlohmann::json(*r.candidate_median_s) : nlohmann::json();
          e["reference_median_s"] = r.reference_median_s ? nlohmann::json(*r.reference_median_s) : nlohmann::json();
          j["evaluations"].push_back(e);
        }
        std::cout << json_text(j) << "\n";
        return exit_ok;
      }
      if (rows.empty()) {
        std::cout << "no evaluations recorded\n";
        return exit_ok;
      }
      std::cout << fmt::format("{:>5}  {:<14} {:<28} {:<15} {:>11} {:>9}  {}\n", "id", "problem", "candidate", "status",
                               "time", "speedup", "started");
      for (auto& r : rows) {
        std::string sp = "-";
        if (r.candidate_median_s && r.reference_median_s && *r.candidate_median_s > 0)
          sp = fmt::format("{:.2f}x", *r.reference_median_s / *r.candidate_median_s);
        std::cout << fmt::format("{:>5}  {:<14} {:<28} {:<15} {:>11} {:>9}  {}\n", r.id, r.problem.substr(0, 14),
                                 r.candidate_label.substr(0, 28), r.status,
                                 r.candidate_median_s ? format_seconds(*r.candidate_median_s) : "-", sp, r.started_at);
      }
      return exit_ok;
    }
    auto ev = db.get_evaluation(target.id);
    if (!ev) KFORGE_THROW(usage, "{}: no evaluation #{}", g.db_path().string(), target.id);
    auto cand = db.get_candidate(ev->candidate_id);
    if (g.json) {
      auto j = nlohmann::json::parse(ev->summary_json.empty() ? "{}" : ev->summary_json, nullptr, false);
      if (j.is_discarded() || j.empty()) j = {{"schema", "kforge.eval/1"}, {"evaluation_id", ev->id}};
      j["status"] = ev->status;
      j["message"] = ev->message;
      j["started_at"] = ev->started_at;
      j["finished_at"] = ev->finished_at;
      if (o->source && cand) j["candidate"]["source"] = cand->source;
      std::cout << json_text(j) << "\n";
      return exit_ok;
    }
    std::cout << fmt::format("evaluation #{}  {}  {}\n", ev->id, ev->status, ev->started_at);
    if (cand)
      std::cout << fmt::format("candidate  #{} {} ({}, sha256 {})\n", cand->id, cand->label, cand->origin,
                               cand->hash.substr(0, 16));
    std::cout << fmt::format("verdict    {}\n", ev->message);
    int failed = 0;
    for (auto& c : ev->checks) failed += !c.passed;
    std::cout << fmt::format("checks     {} recorded, {} failed\n", ev->checks.size(), failed);
    for (auto& c : ev->checks) {
      if (c.passed) continue;
      auto d = nlohmann::json::parse(c.detail_json, nullptr, false);
      std::string msg = d.is_object() ? d.value("message", "") : "";
      const bool repeat_call = d.is_object() && d.value("run", 0) == 1;
      std::cout << fmt::format("  FAIL {:<16} {}{}\n", c.name,
                               c.case_name.empty() ? ""
                                                   : fmt::format("case '{}' trial {}{}: ", c.case_name, c.trial,
                                                                 repeat_call ? " (repeat call)" : ""),
                               msg);
    }
    for (auto& t : ev->timings)
      std::cout << fmt::format("time       {:<10} median {}  min {}  max {}  n={}\n", t.subject,
                               format_seconds(t.median_s), format_seconds(t.min_s), format_seconds(t.max_s), t.samples);
    if (o->source && cand) std::cout << "\n" << cand->source;
    return exit_ok;
  };
}

} // namespace kforge::cli
