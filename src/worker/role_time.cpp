// Role "time": subjects timed interleaved on rotating inputs, with the timed calls that
// are re-verified.
#include "worker/roles.hpp"

#include "eval/inputs.hpp"
#include "eval/timer.hpp"

#include <fmt/format.h>

#include <memory>
#include <random>
#include <variant>

namespace kforge::worker {

int run_time(channel_writer& ch, const problem::problem& p, const nlohmann::json& job, device::backend& dev) {
  const auto& tj = job["timing"];
  eval::timing_config cfg;
  cfg.budget_s = tj.value("budget_s", 2.0);
  cfg.warmup = tj.value("warmup", 2);
  cfg.min_samples = tj.value("min_samples", 10);
  cfg.max_samples = tj.value("max_samples", 1000);
  cfg.target_rel_ci = tj.value("target_rel_ci", 0.01);
  const int rotations = tj.value("rotations", 3);
  std::mt19937_64 rng(tj.value("seed", std::uint64_t{7}));

  struct subject_state {
    std::string name;
    kernel_library lib;
    std::vector<std::unique_ptr<eval::tensor_set>> sets;
  };
  std::vector<subject_state> subjects;
  // The candidate first, then the reference, then any baselines.
  for (auto& sj : job["subjects"]) {
    const std::string name = sj["name"];
    auto l = load_kernel(sj["library"], p);
    if (auto* e = std::get_if<std::string>(&l)) {
      ch.send({{"type", "error"}, {"reason", "load_failed"}, {"message", fmt::format("{}: {}", name, *e)}});
      return 0;
    }
    subjects.push_back({name, std::get<kernel_library>(l), {}});
  }
  // Fresh inputs per rotation, the same values for both subjects: a ratio of like with like.
  std::vector<std::vector<eval::host_tensor>> inputs;
  for (int r = 0; r < rotations; ++r)
    inputs.push_back(eval::make_inputs(p, p.cases[r % p.cases.size()], rng(), eval::precision::nominal));
  for (auto& s : subjects)
    for (int r = 0; r < rotations; ++r) {
      auto ts = std::make_unique<eval::tensor_set>(dev, p, eval::precision::nominal, rng());
      ts->upload_inputs(inputs[r]);
      ts->set_workspace(workspace_size(s.lib, *ts), rng());
      s.sets.push_back(std::move(ts));
    }
  // Re-verification of timed calls: the parent's recheck trials (verification trials, whose
  // truth it has) replace a rotation's inputs for one timed call, at a random early call and
  // after sampling ends, and once go into buffers of their own. Their outputs go back with
  // "trial" = the place in the rechecks list. The candidate sees a timed call
  // like any other, so a cache keyed on pointers, or a switch after N calls, answers wrong.
  std::vector<trial> rechecks;
  for (auto& rj : job.value("rechecks", nlohmann::json::array())) rechecks.push_back(trial_of(rj));
  auto recheck_inputs = [&](const trial& t) { return eval::make_trial_inputs(p, t.case_name, t.seed, eval::precision::nominal); };
  const int early_call = rechecks.empty() ? -1 : static_cast<int>(rng() % (cfg.warmup + cfg.min_samples));
  int candidate_calls = 0, pending = -1;

  std::vector<eval::timing_subject> ts;
  for (auto& s : subjects) {
    eval::timing_subject t{s.name, [&s](int r) { return s.lib.forward(&s.sets[r]->args()); },
                           [&s](int r) { s.sets[r]->poison(0xFF); }, [&s](int r) { return s.sets[r]->regions(); },
                           rotations, {}};
    if (s.name == "candidate" && !rechecks.empty()) {
      t.prepare = [&, sp = &s](int r) {
        if (candidate_calls++ == early_call) sp->sets[r]->upload_inputs(recheck_inputs(rechecks[0])), pending = r;
        sp->sets[r]->poison(0xFF);
      };
      t.finish = [&, sp = &s](int r) {
        if (pending != r) return;
        send_outputs(ch, sp->sets[r]->download_outputs(), "candidate", 0, 0);
        sp->sets[r]->upload_inputs(inputs[r]);
        pending = -1;
      };
    }
    ts.push_back(std::move(t));
  }
  ch.send({{"type", "progress"}, {"phase", "timing"}});
  bool failed = false;
  for (auto& r : eval::time_interleaved(dev, ts, cfg)) {
    failed |= r.failed_rc != 0;
    ch.send({{"type", "timing"}, {"subject", r.subject}, {"samples", r.samples}, {"failed_rc", r.failed_rc}});
  }
  if (failed || rechecks.size() < 3 || subjects.empty() || subjects[0].name != "candidate") return 0;
  // After sampling: one more timed call in the timed buffers, one in new buffers.
  auto& cand = subjects[0];
  eval::tensor_set fresh(dev, p, eval::precision::nominal, rng());
  fresh.upload_inputs(recheck_inputs(rechecks[2]));
  fresh.set_workspace(workspace_size(cand.lib, fresh), rng());
  cand.sets[0]->upload_inputs(recheck_inputs(rechecks[1]));
  for (auto [set, place] : {std::pair{cand.sets[0].get(), 1}, std::pair{&fresh, 2}}) {
    set->poison(0xFF);
    dev.flush_caches(set->regions());
    int rc = 0;
    (void)dev.time_call([&] { return cand.lib.forward(&set->args()); }, &rc);
    if (rc != 0) {
      ch.send({{"type", "timing"}, {"subject", "candidate"}, {"samples", nlohmann::json::array()}, {"failed_rc", rc}});
      return 0;
    }
    send_outputs(ch, set->download_outputs(), "candidate", place, 0);
  }
  return 0;
}

} // namespace kforge::worker
