// kforge export RUN: a run's best candidate as a folder that builds on its own: the source,
// kforge/kernel.h, a README saying what it is and how it measured, and its evaluation record.
#include "cli/commands.hpp"
#include "core/error.hpp"
#include "report/run_report.hpp"
#include "store/store.hpp"

#include <iostream>

namespace kforge::cli {

command_fn add_export_command(CLI::App& app, global_options& g) {
  auto* sub = app.add_subcommand("export", "Write a run's best candidate, kforge/kernel.h and a README to a folder");
  struct opts_t {
    std::string run;
    std::string out;
  };
  auto o = std::make_shared<opts_t>();
  sub->add_option("run", o->run, "The run (7, r7 or run:7; kforge show runs lists them)")->required();
  sub->add_option("--out", o->out, "Folder to write (default ./kforge-export/run-N)");
  sub->add_flag("--json", g.json, "Print as JSON (schema kforge.export/1, docs/json.md)");
  return [o, &g]() {
    const auto run_id = report::parse_run_ref(o->run);
    if (!run_id) KFORGE_THROW(usage, "export {}: give a run as 7, r7 or run:7 (kforge show runs lists them)", o->run);
    if (!std::filesystem::exists(g.db_path()))
      KFORGE_THROW(usage, "{}: no experiment database here yet (run kforge optimize first, or pass --db)",
                   g.db_path().string());
    store::store db(g.db_path());
    const std::filesystem::path dir =
        o->out.empty() ? std::filesystem::path("kforge-export") / ("run-" + std::to_string(*run_id)) : std::filesystem::path(o->out);
    const auto r = report::export_best(db, *run_id, dir);
    if (g.json) {
      nlohmann::json j{{"schema", "kforge.export/1"},
                       {"run", r.run_id},
                       {"candidate_id", r.candidate_id},
                       {"evaluation_id", r.evaluation_id},
                       {"dir", r.dir.string()},
                       {"backend", r.cuda ? "cuda" : "cpu"},
                       {"kernel_only", r.kernel_only},
                       {"files", nlohmann::json::array()}};
      for (auto& f : r.files) j["files"].push_back(f.string());
      std::cout << j.dump(2) << "\n";
      return exit_ok;
    }
    std::cout << fmt::format("exported run {}'s best (candidate #{}{}) to {}\n", r.run_id, r.candidate_id,
                             r.kernel_only ? ", kernel-only" : "", r.dir.string());
    for (auto& f : r.files) std::cout << "  " << f.string() << "\n";
    std::cout << fmt::format("see {} for how to build it\n", (r.dir / "README.md").string());
    return exit_ok;
  };
}

} // namespace kforge::cli
