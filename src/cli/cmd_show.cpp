// kforge show [EVALUATION]: the experiment record: recent evaluations, or one in full.
#include "cli/commands.hpp"
#include "cli/format.hpp"
#include "core/error.hpp"
#include "store/store.hpp"

#include <iostream>

namespace kforge::cli {

command_fn add_show_command(CLI::App& app, global_options& g) {
  auto* sub = app.add_subcommand("show", "Show recorded evaluations (a list, or one by id)");
  struct opts_t {
    std::optional<int64_t> id;
    std::string problem;
    int limit = 20;
    bool source = false;
  };
  auto o = std::make_shared<opts_t>();
  sub->add_option("evaluation", o->id, "Evaluation id (omit for a list of recent ones)");
  sub->add_option("--problem", o->problem, "Only this problem's evaluations");
  sub->add_option("--limit", o->limit, "How many to list")->check(CLI::PositiveNumber);
  sub->add_flag("--source", o->source, "Also print the candidate's source");
  sub->add_flag("--json", g.json, "Print as JSON (schemas kforge.show-list/1 and kforge.eval/1, docs/json.md)");
  return [o, &g]() {
    if (!std::filesystem::exists(g.db_path()))
      KFORGE_THROW(usage, "{}: no experiment database here yet (run kforge eval first, or pass --db)",
                   g.db_path().string());
    store::store db(g.db_path());
    if (!o->id) {
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
        std::cout << j.dump(2) << "\n";
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
    auto ev = db.get_evaluation(*o->id);
    if (!ev) KFORGE_THROW(usage, "{}: no evaluation #{}", g.db_path().string(), *o->id);
    auto cand = db.get_candidate(ev->candidate_id);
    if (g.json) {
      auto j = nlohmann::json::parse(ev->summary_json.empty() ? "{}" : ev->summary_json, nullptr, false);
      if (j.is_discarded() || j.empty()) j = {{"schema", "kforge.eval/1"}, {"evaluation_id", ev->id}};
      j["status"] = ev->status;
      j["message"] = ev->message;
      j["started_at"] = ev->started_at;
      j["finished_at"] = ev->finished_at;
      if (o->source && cand) j["candidate"]["source"] = cand->source;
      std::cout << j.dump(2) << "\n";
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
