// kforge log [PROBLEM]: the experiment log an engineer would keep by hand: every
// evaluation with its hypothesis, prediction, outcome, and whether it was kept.
#include "cli/commands.hpp"
#include "cli/format.hpp"
#include "core/error.hpp"
#include "store/store.hpp"

#include <iostream>

namespace kforge::cli {

command_fn add_log_command(CLI::App& app, global_options& g) {
  auto* sub = app.add_subcommand("log", "The experiment log: hypothesis, prediction, outcome, kept or not");
  struct opts_t {
    std::string problem;
    int limit = 50;
  };
  auto o = std::make_shared<opts_t>();
  sub->add_option("problem", o->problem, "Only this problem (its name)");
  sub->add_option("--limit", o->limit, "The newest N entries (0: all)");
  sub->add_flag("--json", g.json, "Print as JSON (schema kforge.log/1, docs/json.md)");
  return [o, &g]() {
    if (!std::filesystem::exists(g.db_path()))
      KFORGE_THROW(usage, "{}: no experiment database here yet (run kforge eval first, or pass --db)",
                   g.db_path().string());
    store::store db(g.db_path());
    const auto rows = db.experiment_log(o->problem, o->limit);
    auto opt = [](const std::optional<double>& v) { return v ? nlohmann::json(*v) : nlohmann::json(); };
    if (g.json) {
      nlohmann::json j{{"schema", "kforge.log/1"}, {"entries", nlohmann::json::array()}};
      for (auto& r : rows) {
        nlohmann::json e{{"evaluation_id", r.evaluation_id}, {"problem", r.problem}, {"candidate_id", r.candidate_id},
                         {"label", r.label}, {"origin", r.origin}, {"status", r.status}, {"message", r.message},
                         {"hypothesis", r.hypothesis}, {"predicted_s", opt(r.predicted_s)}, {"kept", r.kept},
                         {"median_s", opt(r.median_s)}, {"reference_median_s", opt(r.reference_median_s)},
                         {"started_at", r.started_at}};
        e["speedup"] = r.median_s && r.reference_median_s && *r.median_s > 0
                           ? nlohmann::json(*r.reference_median_s / *r.median_s)
                           : nlohmann::json();
        j["entries"].push_back(e);
      }
      std::cout << json_text(j) << "\n";
      return exit_ok;
    }
    if (rows.empty()) {
      std::cout << "no experiments recorded" << (o->problem.empty() ? "" : " for " + o->problem) << "\n";
      return exit_ok;
    }
    std::cout << fmt::format("{:>5}  {:<12} {:<24} {:<36} {:>10} {:>10} {:>8}  {:<13} {}\n", "eval", "problem",
                             "candidate", "hypothesis", "predicted", "measured", "speedup", "status", "kept");
    for (auto& r : rows) {
      std::string sp = "-";
      if (r.median_s && r.reference_median_s && *r.median_s > 0) sp = fmt::format("{:.2f}x", *r.reference_median_s / *r.median_s);
      std::string hyp = r.hypothesis.empty() ? "-" : r.hypothesis;
      if (hyp.size() > 36) hyp = hyp.substr(0, 35) + "~";
      std::cout << fmt::format("{:>5}  {:<12} {:<24} {:<36} {:>10} {:>10} {:>8}  {:<13} {}\n", r.evaluation_id,
                               r.problem.substr(0, 12), r.label.substr(0, 24), hyp,
                               r.predicted_s ? format_seconds(*r.predicted_s) : "-",
                               r.median_s ? format_seconds(*r.median_s) : "-", sp, r.status.substr(0, 13),
                               r.kept ? "kept" : (r.status == "passed" ? "reverted" : "-"));
    }
    return exit_ok;
  };
}

} // namespace kforge::cli
