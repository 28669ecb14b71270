// kforge export RUN: a run's best candidate as a folder that builds on its own: the source,
// kforge/kernel.h, a README saying what it is and how it measured, and its evaluation record;
// with --torch, also a PyTorch extension around it (report/torch_export.hpp).
#include "cli/commands.hpp"
#include "cli/format.hpp"
#include "build/compiler.hpp"
#include "build/launch_plan.hpp"
#include "core/error.hpp"
#include "problem/problem.hpp"
#include "report/run_report.hpp"
#include "report/torch_export.hpp"
#include "store/store.hpp"

#include <algorithm>
#include <iostream>
#include <optional>

namespace kforge::cli {

command_fn add_export_command(CLI::App& app, global_options& g) {
  auto* sub = app.add_subcommand("export", "Write a run's best candidate, kforge/kernel.h and a README to a folder");
  struct opts_t {
    std::string run;
    std::string out;
    bool torch = false;
  };
  auto o = std::make_shared<opts_t>();
  sub->add_option("run", o->run, "The run (7, r7 or run:7; kforge show runs lists them)")->required();
  sub->add_option("--out", o->out, "Folder to write (default ./kforge-export/run-N)");
  sub->add_flag("--torch", o->torch,
                "Also write a PyTorch C++ extension around it, with a test script (TORCH.md in the folder)");
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
    // The extension embeds the problem's tensors, so the problem must load; it is loaded before
    // anything is written, so that a problem moved away since the run fails cleanly.
    std::optional<problem::problem> prob;
    if (o->torch) {
      auto run = db.get_run(*run_id);
      if (!run) KFORGE_THROW(usage, "no run {}", *run_id);
      if (run->problem_path.empty())
        KFORGE_THROW(usage, "export {} --torch: the run records no problem directory to read the tensors from", o->run);
      try {
        prob = problem::load(run->problem_path);
      } catch (const kforge::error& e) {
        KFORGE_THROW(usage, "export {} --torch: cannot load the run's problem from {}: {}", o->run, run->problem_path,
                     e.what());
      }
      if (prob->name != run->problem)
        KFORGE_THROW(usage, "export {} --torch: {} now holds problem '{}', but run {} was for '{}'", o->run,
                     run->problem_path, prob->name, *run_id, run->problem);
      // Refused before anything is written (write_torch_extension checks it again).
      if (run->best_candidate_id && prob->backend == problem::backend_kind::cuda)
        if (auto cand = db.get_candidate(*run->best_candidate_id); cand && build::is_python_source(cand->source))
          KFORGE_THROW(usage,
                       "export {} --torch: the best candidate (#{}) is already a PyTorch module (class ModelNew): "
                       "export it without --torch and import it as it is",
                       o->run, cand->id);
        else if (cand && build::declares_launches(cand->source))
          KFORGE_THROW(usage,
                       "export {} --torch: the best candidate (#{}) is kernel-only (`// kforge: launch` directives): "
                       "it has no kf_forward for an extension to call; export it without --torch and launch its "
                       "kernels from your own host code",
                       o->run, cand->id);
    }
    auto r = report::export_best(db, *run_id, dir);
    std::vector<std::filesystem::path> torch_files;
    if (prob) {
      torch_files = report::write_torch_extension(*prob, dir, r.files.front().filename().string());
      for (auto& f : torch_files)
        if (std::find(r.files.begin(), r.files.end(), f) == r.files.end()) r.files.push_back(f);
    }
    if (g.json) {
      nlohmann::json j{{"schema", "kforge.export/1"},
                       {"run", r.run_id},
                       {"candidate_id", r.candidate_id},
                       {"evaluation_id", r.evaluation_id},
                       {"dir", r.dir.string()},
                       {"backend", r.cuda ? "cuda" : "cpu"},
                       {"kernel_only", r.kernel_only},
                       {"torch", prob.has_value()},
                       {"files", nlohmann::json::array()}};
      for (auto& f : r.files) j["files"].push_back(f.string());
      if (prob) {
        j["torch_files"] = nlohmann::json::array();
        for (auto& f : torch_files) j["torch_files"].push_back(f.string());
      }
      std::cout << json_text(j) << "\n";
      return exit_ok;
    }
    std::cout << fmt::format("exported run {}'s best (candidate #{}{}) to {}\n", r.run_id, r.candidate_id,
                             r.kernel_only ? ", kernel-only" : "", r.dir.string());
    for (auto& f : r.files) std::cout << "  " << f.string() << "\n";
    std::cout << fmt::format("see {} for how to build it\n", (r.dir / "README.md").string());
    if (prob)
      std::cout << fmt::format("PyTorch extension: see {}; check it with `python3 test_kforge_ext.py` there\n",
                               (r.dir / "TORCH.md").string());
    return exit_ok;
  };
}

} // namespace kforge::cli
