#include "worker/evaluate.hpp"
#include "worker/command_input.hpp"

#include "bridge/torch_helper.hpp"
#include "core/fs.hpp"
#include "device/backend.hpp"
#include "worker/build_roles.hpp"
#include "worker/candidate_run.hpp"
#include "worker/device_judge.hpp"
#include "worker/early_workers.hpp"
#include "worker/judge.hpp"
#include "worker/judge_keeper.hpp"
#include "worker/plan.hpp"
#include "worker/sanitize.hpp"
#include "worker/stage.hpp"
#include "worker/timing.hpp"
#include "worker/truth.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <future>
#include <memory>
#include <optional>

namespace kforge::worker {

const eval::timing_summary* evaluation::timing(const std::string& subject) const {
  for (auto& t : timings)
    if (t.subject == subject) return &t;
  return nullptr;
}

std::optional<double> evaluation::speedup() const {
  auto* c = timing("candidate");
  auto* r = timing("reference");
  if (!c || !r || c->median_s <= 0) return std::nullopt;
  return r->median_s / c->median_s;
}

evaluation evaluate(const problem::problem& p, const std::filesystem::path& candidate_source,
                    const evaluate_options& opts) {
  evaluation ev;
  recorder rec{ev, opts.observer};
  const auto exe = opts.worker_exe.empty() ? default_worker_exe() : opts.worker_exe;
  const double timeout = opts.timeout_s > 0 ? opts.timeout_s : p.eval.timeout_s;
  const int trials_per_case = opts.trials_per_case > 0 ? opts.trials_per_case : p.eval.trials_per_case;
  auto fail_with = [&](const eval::check_result& c) {
    ev.failure = c;
    ev.status = c.name;
    ev.message = with_place(c);
  };
  using clock = std::chrono::steady_clock;
  auto t_phase = clock::now();
  auto phase_start = [&](std::string_view name) {
    if (opts.observer.on_phase) opts.observer.on_phase(name, std::nullopt);
  };
  auto phase_done = [&](const char* name, double minus = 0) {
    const double s = std::chrono::duration<double>(clock::now() - t_phase).count() - minus;
    ev.phases[name] = s;
    t_phase = clock::now();
    const std::string_view n(name);
    if (opts.observer.on_phase) opts.observer.on_phase(n.substr(0, n.size() - 2), s); // "build_s" -> "build"
  };

  // 2. Trials (plan.hpp), drawn first: the judge may start during the builds.
  auto rng = evaluation_rng(opts.seed);
  const auto plan = plan_trials(p, trials_per_case, opts.time, rng);
  const std::uint64_t judge_seed = rng(); // drawn on both paths: a --seed gives both the same later draws

  // 1. Builds, all at once (build_roles.hpp). The bridge's helper imports torch (seconds)
  // meanwhile, for a [torch] problem. A lone evaluation (no device lease to wait for, no judge
  // kept from an earlier one) starts its judge as soon as the reference, oracle and device
  // kernels are built: its process and CUDA start (~0.2 s) then overlap the candidate's compile.
  std::future<void> torch_warm;
  if (p.torch) torch_warm = std::async(std::launch::async, bridge::warm_helper);
  // Started here, on the thread that keeps it (its process ends with the thread that forked it),
  // and awaited after the builds.
  std::unique_ptr<device_judge> early_judge;
  const bool judge_early = !p.torch && !opts.judges && !opts.acquire_device && device_path_refused(p).empty();
  const auto start_judge = [&](const role_artifacts& trusted) {
    if (!judge_early) return;
    try {
      const worker_context c{.p = p, .exe = exe, .device = opts.device, .timeout_s = timeout};
      early_judge = std::make_unique<device_judge>(c, trusted, plan.trials, device_sets, judge_seed,
                                                   device_judge::start_only);
    } catch (const std::exception&) {
      // not started: the device path below starts one and reports why, if it cannot
    }
  };
  // A Python candidate's call and timing workers start now, on a staged build record, so that
  // their interpreter and torch import (seconds) overlap the build (early_workers.hpp).
  const double budget = opts.time_budget_s > 0 ? opts.time_budget_s : p.eval.time_budget_s;
  std::unique_ptr<early_python_workers> early;
  if (candidate_source.extension() == ".py" && p.backend == problem::backend_kind::cuda &&
      device_path_refused(p).empty()) {
    const auto t_early = timeline::clock::now();
    try {
      auto plan = build::plan_python_build(candidate_request(p, candidate_source));
      if (plan.why_not.empty()) {
        early = stage_python_workers(std::move(plan));
        const worker_context c{.p = p, .exe = exe, .device = opts.device, .timeout_s = timeout};
        const auto warm = warm_modules(read_file(candidate_source));
        early->set_call(defer_call_worker(c, early->library(), timeout, warm));
        if (opts.time) early->set_time(defer_time_worker(c, early->library(), budget, warm));
      }
    } catch (const std::exception&) {
      early.reset(); // started after the build instead, as for any candidate
    }
    if (early) rec.steps.add("early workers: started (Python: torch imports during the build)", t_early);
  }
  phase_start("build");
  const auto t_build = timeline::clock::now();
  const auto builds = build_roles(p, candidate_source, opts.time, opts.observer, ev.builds, start_judge);
  phase_done("build_s");
  rec.steps.add("build (every role)", t_build);
  if (early && !early->stage(builds.candidate)) early.reset(); // killed unused
  if (!builds.candidate.ok) {
    const auto c = build_failure(candidate_source, builds.candidate);
    rec.check(c);
    fail_with(c);
    return ev; // an early judge ends unused
  }

  // 3. The device, held from here to the last worker, so no other evaluation verifies or
  // times on it meanwhile (builds above ran without it).
  for (auto& tj : plan.trials) ev.trials.push_back(tj);
  device_lease lease{.ordinal = opts.device};
  if (opts.acquire_device) lease = opts.acquire_device();
  ev.device_index = lease.ordinal;
  const std::string device_model = device::device_model(p.backend, lease.ordinal);
  ev.device = device::describe_device(p.backend, lease.ordinal);
  const worker_context ctx{.p = p, .exe = exe, .device = lease.ordinal, .timeout_s = timeout};

  // 4-5. Truth and verification on the GPU-resident path (device_judge.hpp: inputs, truth and
  // judging stay on the device) where the problem and the machine allow it, else through the
  // host (truth.hpp, judge.hpp). Either way the truth comes from processes that never see
  // candidate code, and the candidate runs alone in its worker.
  std::unique_ptr<device_judge> dj;
  std::optional<judge> host_judge;
  truth host_truth;
  if (torch_warm.valid()) torch_warm.wait();
  phase_start("oracle");
  if (auto refused = device_path_refused(p); !refused.empty()) {
    ev.engine = {{"path", "host"}, {"why", refused}};
  } else {
    try {
      if (opts.judges) dj = opts.judges->take(ctx, builds, plan.trials, device_sets, judge_seed);
      const bool kept = dj != nullptr;
      const bool early = early_judge != nullptr;
      const auto t_judge = timeline::clock::now();
      if (early) {
        dj = std::move(early_judge); // started during the builds
        dj->await_ready();
      }
      if (!dj) dj = std::make_unique<device_judge>(ctx, builds, plan.trials, device_sets, judge_seed);
      rec.steps.add(kept ? "judge: kept" : "judge: ready", t_judge);
      ev.engine = {{"path", "device"}, {"judge", kept    ? "kept from an earlier evaluation"
                                              : early ? "new, started during the builds"
                                                      : "new"}};
    } catch (const device_path_unavailable& e) {
      ev.engine = {{"path", "host"}, {"why", e.what()}};
      ev.review.push_back(fmt::format("evaluated through the host (slower), not on the GPU: {}", e.what()));
    }
  }
  // Drawn here on both paths, so that a --seed gives both the same draws.
  const std::uint64_t verify_seed = rng(), timing_seed = rng();
  std::unique_ptr<worker_session> call_worker;
  std::unique_ptr<device_timing> timing_workers;
  if (dj) {
    // The candidate's worker and (when timing) the timing workers start now: their process
    // and CUDA start-up overlaps the truth and verification. A candidate that fails verification
    // never gets a timing command; its timing workers are killed unused.
    call_worker = start_call_worker(ctx, builds.candidate.library, candidate_source, *dj, verify_seed,
                                    ctx.timeout_s, plan.trials, rec.checks(), early ? early->take_call() : nullptr);
    const auto t_truth = timeline::clock::now();
    for (auto& tj : plan.trials) dj->load(0, tj["trial"].get<int>()); // every trial's truth, now
    ev.reference_errors = dj->reference_errors();
    rec.steps.add("truth: every trial's reference and oracle", t_truth);
    phase_done("oracle_s");
    const auto t_timing_start = timeline::clock::now();
    if (opts.time)
      timing_workers = std::make_unique<device_timing>(ctx, builds, *dj, budget, timing_seed,
                                                       early ? early->take_time() : nullptr);
    rec.steps.add("timing workers: started", t_timing_start);
  } else {
    early.reset(); // the host path starts its own workers
    host_truth = compute_truth(ctx, builds, plan.trials);
    if (!p.torch) ev.confinement["oracle"] = host_truth.confinement;
    phase_done("oracle_s");
    ev.reference_errors = reference_errors(p, plan.trials, host_truth);
  }

  // 5. The candidate, alone in its worker, judged as its outputs appear.
  phase_start("verify");
  verify_run verify;
  if (dj) {
    verify = verify_on_device(std::move(call_worker), plan.trials, *dj, plan.recheck_trials, rec.checks(),
                              &rec.steps);
  } else {
    host_judge.emplace(p, plan.trials, plan.recheck_trials, host_truth, rec.checks());
    verify = verify_candidate(ctx, builds.candidate.library, candidate_source, plan.trials, verify_seed, *host_judge,
                              rec.checks());
  }
  if (!verify.launches.is_null()) ev.engine["launches"] = verify.launches;
  ev.worker_output = verify.outcome.output;
  ev.confinement["verify"] = verify.outcome.confinement;
  phase_done("verify_s", verify.judge_s);
  if (auto f = process_failure(verify.outcome, "a verification call", plan.trials)) rec.check(*f);
  ev.phases["judge_s"] = verify.judge_s;
  // The judge ends once every worker of this candidate has (it may live on through timing),
  // or, in a search, is kept for the next evaluation (judge_keeper.hpp).
  auto end_judge = [&] {
    timing_workers.reset(); // unused ones are killed first: they hold the judge's sets
    if (dj && opts.judges) {
      ev.confinement["judge"] = dj->confinement();
      opts.judges->keep(std::move(dj));
    } else if (dj) {
      ev.confinement["judge"] = dj->finish();
    }
    dj.reset();
  };
  const bool any_output = dj ? std::any_of(ev.checks.begin(), ev.checks.end(),
                                           [](const eval::check_result& c) { return c.name == "tolerance"; })
                             : host_judge->any_output();

  // The verdict: the highest-priority failing check; ties go to the earliest trial.
  const eval::check_result* worst = nullptr;
  for (auto& c : ev.checks)
    if (!c.passed && (!worst || eval::check_priority(c.name) < eval::check_priority(worst->name))) worst = &c;
  if (!worst && !any_output) {
    rec.check({.name = "exited_early", .passed = false, .message = "the verify worker returned no outputs"});
    worst = &ev.checks.back();
  }
  if (worst) {
    end_judge();
    fail_with(*worst);
    return ev;
  }
  ev.status = "passed";
  ev.message = fmt::format("all {} checks passed on {} trials over {} input distributions", ev.checks.size(),
                           plan.trials.size(), p.cases.size());

  // 6. compute-sanitizer, when asked: after verification (nothing is sanitized that is
  // already wrong), before timing (a candidate it fails is not timed).
  if (opts.sanitize) {
    phase_start("sanitize");
    const auto t_sanitize = timeline::clock::now();
    sanitize_options so{.worker_exe = exe, .seed = opts.seed, .device = lease.ordinal};
    so.on_check = [&](const eval::check_result& c) { rec.check(c); };
    if (auto why = sanitize_unavailable(p, so); !why.empty()) {
      ev.sanitize = {{"skipped", why}};
    } else {
      auto s = sanitize_library(p, builds.candidate.library, so);
      ev.confinement["sanitize"] = s.confinement;
      nlohmann::json names = nlohmann::json::array();
      for (auto& c : s.checks) names.push_back(c.name);
      ev.sanitize = {{"passed", s.passed()}, {"checks", names}};
      if (!s.skipped.empty()) ev.sanitize = {{"skipped", s.skipped}};
      for (auto& c : s.checks)
        if (!c.passed) {
          end_judge();
          fail_with(c);
          return ev;
        }
    }
    phase_done("sanitize_s");
    rec.steps.add("sanitize", t_sanitize);
  }

  // 7. Timing, only for a correct candidate (timing.hpp), and its timed calls re-verified.
  if (!opts.time) {
    end_judge();
    return ev;
  }
  phase_start("timing");
  // How the timing workers waited between samples: polling keeps their cores awake (command_input.hpp).
  ev.engine["host_spin_us"] = default_host_spin().count();
  if (auto cpus = timing_cpus()) ev.engine["timing_cpus"] = {cpus->first, cpus->second};
  const std::uint64_t torch_seed = rng(); // drawn on both paths
  if (dj) {
    timing_workers->run(plan.rechecks, rec);
  } else {
    const auto timed = time_subjects(ctx, builds, plan.rechecks, budget, timing_seed, rec);
    host_judge->timed_outputs(plan.rechecks, timed);
  }
  if (p.torch && ev.timing("candidate")) {
    const auto t_torch = timeline::clock::now();
    time_torch_reference(ctx, budget, torch_seed, opts.reuse_torch_baselines, device_model, dj.get(), rec);
    rec.steps.add("timing: PyTorch baselines", t_torch);
  }
  const auto t_end = timeline::clock::now();
  if (dj) end_judge();
  rec.steps.add("judge: end or kept", t_end);
  phase_done("timing_s");
  check_plausibility(p, device_model, rec);
  for (auto& c : ev.checks)
    if (!c.passed) {
      fail_with(c);
      if (c.name != "impossible_time") ev.timings.clear(); // an impossible time is itself the evidence
      break;
    }
  return ev;
}

nlohmann::json to_json(const std::vector<case_reference_error>& errors) {
  nlohmann::json j = nlohmann::json::array();
  for (auto& r : errors)
    j.push_back({{"case", r.case_name}, {"output", r.output}, {"max_abs", r.error.max_abs},
                 {"rel_l2", r.error.rel_l2}, {"max_abs_oracle", r.error.max_abs_oracle}});
  return j;
}

nlohmann::json to_json(const evaluation& ev, const problem::problem& p) {
  nlohmann::json j;
  j["schema"] = "kforge.eval/1";
  j["problem"] = p.name;
  j["status"] = ev.status;
  j["passed"] = ev.passed();
  j["message"] = ev.message;
  j["failure"] = ev.failure ? eval::to_json(*ev.failure) : nlohmann::json();
  j["device"] = ev.device;
  j["device_index"] = ev.device_index;
  j["precision"] = p.tolerance.precision;
  j["review"] = ev.review;
  j["sanitize"] = ev.sanitize;
  j["confinement"] = ev.confinement;
  j["engine"] = ev.engine;
  j["kernels"] = ev.kernels;
  j["builds"] = nlohmann::json::array();
  for (auto& b : ev.builds)
    j["builds"].push_back({{"role", b.role}, {"toolchain", b.artifact.toolchain}, {"ok", b.artifact.ok},
                           {"cached", b.artifact.cached},
                           {"duration_s", b.artifact.duration_s}, {"cache_key", b.artifact.cache_key},
                           {"compiler", b.artifact.compiler}, {"command", b.artifact.command},
                           {"diagnostics", b.artifact.diagnostics}, {"resources", b.artifact.resources}});
  j["trials"] = ev.trials;
  j["phases"] = ev.phases;
  j["reference_error"] = to_json(ev.reference_errors);
  j["checks"] = nlohmann::json::array();
  int failed = 0;
  for (auto& c : ev.checks) {
    j["checks"].push_back(eval::to_json(c));
    failed += !c.passed;
  }
  j["checks_failed"] = failed;
  j["timing"] = nullptr;
  if (!ev.timings.empty()) {
    nlohmann::json t;
    for (auto& s : ev.timings) t[s.subject] = eval::to_json(s);
    if (auto sp = ev.speedup()) t["speedup"] = *sp;
    if (auto* c = ev.timing("candidate")) {
      nlohmann::json over = nlohmann::json::object();
      for (auto& s : ev.timings)
        if (s.subject != "candidate" && c->median_s > 0) over[s.subject] = s.median_s / c->median_s;
      t["speedup_over"] = over; // reference and every baseline: their median / the candidate's
    }
    t["roofline"] = ev.roofline.is_null() ? nlohmann::json() : ev.roofline;
    if (auto* c = ev.timing("candidate")) {
      if (p.work.flops > 0) t["candidate_gflops"] = p.work.flops / c->median_s * 1e-9;
      if (p.work.min_bytes > 0) t["candidate_gbytes_per_s"] = p.work.min_bytes / c->median_s * 1e-9;
    }
    j["timing"] = t;
  }
  return j;
}

} // namespace kforge::worker
