// kforge profile PROBLEM CANDIDATE: why is it slow? Counters from one call under Nsight
// Compute, a digest with a bottleneck class and its evidence, and the binary's SASS mix.
#include "cli/commands.hpp"
#include "core/error.hpp"
#include "core/fs.hpp"
#include "core/hash.hpp"
#include "search/record.hpp"
#include "worker/profile_run.hpp"

#include <iostream>

namespace kforge::cli {

command_fn add_profile_command(CLI::App& app, global_options& g) {
  auto* sub = app.add_subcommand("profile", "Profile a candidate with Nsight Compute: counters, bottleneck, SASS mix");
  struct opts_t {
    std::string problem, candidate;
    int device = 0;
    bool raw = false;
  };
  auto o = std::make_shared<opts_t>();
  sub->add_option("problem", o->problem, "Problem directory (holding problem.toml)")->required();
  sub->add_option("candidate", o->candidate, "Candidate source file")->required();
  sub->add_option("--device", o->device, "GPU ordinal");
  sub->add_flag("--raw", o->raw, "Also print ncu's raw CSV");
  sub->add_flag("--json", g.json, "Print as JSON (schema kforge.profile/1, docs/json.md)");
  return [o, &g]() {
    const auto p = problem::load(o->problem);
    if (!std::filesystem::exists(o->candidate)) KFORGE_THROW(usage, "{}: candidate file not found", o->candidate);
    store::store db(g.db_path());
    const auto pid = search::problem_id(db, p);
    const std::string source = read_file(o->candidate);
    const auto cid = db.put_candidate(pid, source, "file", std::filesystem::path(o->candidate).filename().string());
    auto run = worker::profile_candidate(p, o->candidate, {.device = o->device});

    auto j = worker::profile_document(p, run, o->device);
    j["candidate"] = {{"id", cid}, {"path", std::filesystem::absolute(o->candidate).string()}, {"hash", sha256_hex(source)}};
    const std::string device = j["device"];
    const std::string text = j["text"];
    if (o->raw) j["raw_csv"] = run.log;
    db.put_profile({.candidate_id = cid, .device = device, .ok = run.ok(), .failure = run.failure,
                    .digest_json = j["digest"].dump(), .digest_text = text});
    if (g.json) {
      std::cout << j.dump(2) << "\n";
    } else {
      std::cout << fmt::format("kforge profile {} {}{}\n", p.name, o->candidate, device.empty() ? "" : "  on " + device);
      std::cout << text << "\n";
      if (!run.sass_note.empty()) std::cout << "static: " << run.sass_note << "\n";
      if (o->raw) std::cout << "\n" << run.log << "\n";
    }
    return run.ok() ? exit_ok : exit_failed;
  };
}

} // namespace kforge::cli
