#include "worker/evaluate.hpp"

#include "bridge/torch_helper.hpp"
#include "bridge/torch_reference.hpp"
#include "core/dtype.hpp"
#include "core/fs.hpp"
#include "core/hash.hpp"
#include "core/error.hpp"
#include "device/backend.hpp"
#include "device/calibration.hpp"
#include "eval/inputs.hpp"
#include "eval/statistics.hpp"
#include "worker/sanitize.hpp"
#include "worker/supervisor.hpp"

#include <chrono>
#include <future>
#include <map>
#include <random>
#include <set>

namespace kforge::worker {
namespace {

using output_key = std::tuple<int, int, std::size_t>; // trial, run, output index

std::string first_line_with(const std::string& text, const std::string& needle) {
  std::size_t pos = 0;
  while (pos < text.size()) {
    auto end = text.find('\n', pos);
    auto line = text.substr(pos, end == std::string::npos ? std::string::npos : end - pos);
    if (line.find(needle) != std::string::npos) return line;
    if (end == std::string::npos) break;
    pos = end + 1;
  }
  return "";
}

// Takes the frame's payload: tensors of gigabytes are moved, never copied.
eval::host_tensor tensor_of(message& m) {
  return {static_cast<kf_dtype>(m.header.value("dtype", static_cast<int>(KF_F32))), std::move(m.payload)};
}

// A worker that did not end cleanly becomes one failed check naming where it was.
std::optional<eval::check_result> process_failure(const worker_outcome& o, const std::string& phase,
                                                  const std::vector<nlohmann::json>& trials) {
  if (o.end == worker_end::done) return std::nullopt;
  eval::check_result c{.name = worker_end_name(o.end), .passed = false};
  std::string where = phase;
  const auto& lp = o.last_progress;
  if (lp.contains("trial") && lp["trial"].is_number_integer()) {
    const int t = lp["trial"];
    c.trial = t;
    if (t >= 0 && t < static_cast<int>(trials.size())) c.case_name = trials[t]["case"];
    c.run = lp.value("run", 0);
    where = fmt::format("{} on case '{}' (trial {}{})", phase, c.case_name, t, c.run ? ", repeat call" : "");
  }
  if (lp.value("phase", "") == "timing") where = "timing";
  if (lp.value("phase", "") == "workspace") where = "kf_workspace_bytes";
  switch (o.end) {
  case worker_end::crashed: c.message = fmt::format("the candidate crashed with {} during {}", o.detail, where); break;
  case worker_end::timeout: c.message = fmt::format("the candidate hung during {}: {}", where, o.detail); break;
  case worker_end::exited_early:
    c.message = fmt::format("the worker exited during {} without a result ({}): the candidate called exit()?", where, o.detail);
    break;
  default: c.message = fmt::format("the result channel was tampered with during {}: {}", where, o.detail); break;
  }
  c.detail = {{"how", o.detail}, {"exit_code", o.exit_code}, {"signal", o.signal}};
  if (!o.output.empty()) c.detail["output"] = o.output.substr(0, 2000);
  return c;
}

std::string with_place(const eval::check_result& c) {
  if (c.case_name.empty() || c.name == "crashed" || c.name == "timeout" || c.name == "exited_early" ||
      c.name == "protocol_error")
    return c.message;
  return fmt::format("case '{}' (trial {}{}): {}", c.case_name, c.trial, c.run ? ", repeat call" : "", c.message);
}

// The PyTorch baselines' samples, timed now or (when `reuse`) taken from a measurement of
// the same problem and module on the same device model less than an hour old: eager and
// torch.compile do not change between a search's candidates, and compile alone takes tens
// of seconds. `phases` says which: torch_baselines = "measured" or "cached <unix time>".
std::vector<bridge::torch_timing> torch_baseline_timings(const problem::problem& p,
                                                         const std::vector<bridge::torch_subject>& subjects,
                                                         const bridge::torch_timing_config& cfg, int device,
                                                         const std::string& device_model, bool reuse, double timeout_s,
                                                         nlohmann::json& phases) {
  const std::string key = sha256_hex(p.toml_text + "\n" + read_file(p.torch->module) + "\n" + device_model +
                                     "\n" + std::to_string(subjects.size()));
  const auto file = cache_root() / "torch-baselines" / (key + ".json");
  const auto now = std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count();
  std::error_code ec;
  if (reuse && std::filesystem::exists(file, ec)) {
    auto j = nlohmann::json::parse(read_file(file), nullptr, false);
    if (j.is_object() && now - j.value("at", 0LL) < 3600) {
      std::vector<bridge::torch_timing> out;
      for (auto& s : j["subjects"]) out.push_back({s["subject"], s["samples"], s["error"]});
      phases["torch_baselines"] = fmt::format("cached {}", j.value("at", 0LL));
      return out;
    }
  }
  auto out = bridge::torch_time(p, subjects, cfg, device, timeout_s);
  phases["torch_baselines"] = "measured";
  nlohmann::json j{{"at", now}, {"subjects", nlohmann::json::array()}};
  for (auto& t : out) j["subjects"].push_back({{"subject", t.subject}, {"samples", t.samples}, {"error", t.error}});
  std::filesystem::create_directories(file.parent_path(), ec);
  write_file_atomic(file, j.dump());
  return out;
}

} // namespace

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
  const auto exe = opts.worker_exe.empty() ? default_worker_exe() : opts.worker_exe;
  const double timeout = opts.timeout_s > 0 ? opts.timeout_s : p.eval.timeout_s;
  const int trials_per_case = opts.trials_per_case > 0 ? opts.trials_per_case : p.eval.trials_per_case;

  auto add_check = [&](eval::check_result c) {
    if (opts.observer.on_check) opts.observer.on_check(c);
    ev.checks.push_back(std::move(c));
  };
  auto fail_with = [&](const eval::check_result& c) {
    ev.failure = c;
    ev.status = c.name;
    ev.message = with_place(c);
  };

  using clock = std::chrono::steady_clock;
  auto since = [](clock::time_point t0) { return std::chrono::duration<double>(clock::now() - t0).count(); };
  auto t_phase = clock::now();

  // 1. Builds, all three at once (each compiler is one process; the cache makes repeats
  // free). Recorded in a fixed order. The reference and oracle failing is the problem's
  // fault, not the candidate's.
  const auto tb = p.backend == problem::backend_kind::cuda ? build::problem_backend::cuda : build::problem_backend::cpu;
  std::vector<std::string> input_names, output_names;
  for (auto* t : p.inputs()) input_names.push_back(t->name);
  for (auto* t : p.outputs()) output_names.push_back(t->name);
  auto launch = [&](const std::string& role, const std::filesystem::path& src, kf_dtype real) {
    return std::async(std::launch::async, [=] {
      return role_build{role, build::compile({.source = src, .real = real, .role = role,
                                              .input_names = input_names, .output_names = output_names},
                                             tb)};
    });
  };
  // A [torch] problem's reference and oracle are its PyTorch module (bridge/), not builds.
  const bool torch_ref = p.torch.has_value();
  // The bridge's helper imports torch (seconds) while the candidate builds.
  std::future<void> warm;
  if (torch_ref) warm = std::async(std::launch::async, bridge::warm_helper);
  std::optional<std::future<role_build>> f_ref, f_orc;
  if (!torch_ref) {
    f_ref = launch("reference", p.reference, p.dtype);
    f_orc = launch("oracle", p.reference, KF_F64);
  }
  auto f_cand = launch("candidate", candidate_source, p.dtype);
  std::vector<std::future<role_build>> f_base;
  if (opts.time)
    for (auto& b : p.baselines) f_base.push_back(launch("baseline:" + b.name, b.source, p.dtype));
  auto record = [&](std::future<role_build>& f) {
    auto b = f.get();
    if (opts.observer.on_build) opts.observer.on_build(b);
    ev.builds.push_back(b);
    return b.artifact;
  };
  const auto ref = f_ref ? record(*f_ref) : build::artifact{.ok = true};
  const auto orc = f_orc ? record(*f_orc) : build::artifact{.ok = true};
  const auto cand = record(f_cand);
  std::vector<build::artifact> base;
  for (auto& f : f_base) {
    base.push_back(record(f));
    if (!base.back().ok)
      KFORGE_THROW(problem, "{}: a baseline does not compile:\n{}", p.toml_path.string(), base.back().diagnostics);
  }
  ev.phases["build_s"] = since(t_phase);
  t_phase = clock::now();
  if (!ref.ok)
    KFORGE_THROW(problem, "{}: the reference does not compile:\n{}", p.reference.string(), ref.diagnostics);
  if (!orc.ok)
    KFORGE_THROW(problem, "{}: the reference does not compile with KF_REAL=double (the oracle):\n{}",
                 p.reference.string(), orc.diagnostics);
  if (!cand.ok) {
    eval::check_result c{.name = "build_failed", .passed = false};
    auto line = first_line_with(cand.diagnostics, "error");
    c.message = fmt::format("{} does not compile: {}", candidate_source.string(),
                            line.empty() ? cand.diagnostics.substr(0, 500) : line);
    c.detail = {{"diagnostics", cand.diagnostics}};
    add_check(c);
    fail_with(c);
    return ev;
  }

  // 2. Trials: every case, fresh seeds each time unless the user fixed one.
  std::mt19937_64 rng(opts.seed ? *opts.seed : std::random_device{}() ^ (std::uint64_t{std::random_device{}()} << 32));
  nlohmann::json trials = nlohmann::json::array(), rechecks = nlohmann::json::array();
  auto add_trial = [&](const std::string& case_name) {
    nlohmann::json tj{{"case", case_name}, {"seed", rng()}, {"trial", static_cast<int>(trials.size())}};
    trials.push_back(tj);
    ev.trials.push_back(tj);
  };
  for (int t = 0; t < trials_per_case; ++t)
    for (auto& c : p.cases) add_trial(c.name);
  // One trial the problem does not declare: hard rows at random positions (eval/inputs.hpp).
  if (p.eval.hidden_case && p.cases.size() >= 2) add_trial(eval::hidden_case);
  // The timed calls that are re-verified (worker_process.cpp, run_time): an early call, one
  // after sampling in the timed buffers, one in new buffers. Their inputs are verification
  // trials', whose truth the oracle computes anyway, and never the timed inputs.
  if (opts.time)
    for (std::size_t i = 0; i < 3; ++i) rechecks.push_back(trials[i % trials.size()]);
  const std::string problem_path = p.dir.string();

  // The device: held from here to the last worker, so no other evaluation verifies or
  // times on it meanwhile (builds above ran without it).
  device_lease lease{.ordinal = opts.device};
  if (opts.acquire_device) lease = opts.acquire_device();
  ev.device_index = lease.ordinal;
  const std::string device_description = device::device_model(p.backend, lease.ordinal);
  ev.device = device::describe_device(p.backend, lease.ordinal);

  // 3. Truth: reference and oracle, in a worker that never sees candidate code (or, for a
  // [torch] problem, the module in the bridge's Python helper, on the same inputs).
  std::map<output_key, eval::host_tensor> oracle_out, ref_out;
  worker_outcome truth;
  if (torch_ref) {
    warm.wait();
    // A trial at a time: only one trial's inputs are ever held (1 GiB for a 4096x65536 softmax).
    for (auto& tj : trials) {
      const int t = tj["trial"];
      auto tt = bridge::torch_truth(
          p, {{t, eval::make_trial_inputs(p, tj["case"], tj["seed"], eval::precision::nominal)}}, lease.ordinal,
          timeout * 4);
      for (auto& [key, v] : tt.reference) ref_out[{key.first, 0, key.second}] = std::move(v);
      for (auto& [key, v] : tt.oracle) oracle_out[{key.first, 0, key.second}] = std::move(v);
    }
  } else
    truth = run_worker(exe,
                       {{"role", "oracle"}, {"problem", problem_path}, {"device", lease.ordinal},
                        {"libraries", {{"reference", ref.library.string()}, {"oracle", orc.library.string()}}},
                        {"trials", trials}},
                       timeout * 4, 64 * 1024, {}, [&](message& m) {
                         if (m.header["type"] != "output") return;
                         output_key k{m.header["trial"], 0, m.header["index"]};
                         (m.header["subject"] == "oracle" ? oracle_out : ref_out)[k] = tensor_of(m);
                       });
  for (auto& m : truth.messages)
    if (m.header["type"] == "error")
      KFORGE_THROW(problem, "{}: the reference failed: {}", p.reference.string(), m.header.value("message", ""));
  ev.phases["oracle_s"] = since(t_phase);
  t_phase = clock::now();
  if (!torch_ref && truth.end != worker_end::done)
    KFORGE_THROW(problem, "{}: the reference worker {} ({}){}", p.reference.string(), worker_end_name(truth.end),
                 truth.detail, truth.output.empty() ? "" : ":\n" + truth.output.substr(0, 2000));
  const auto outs = p.outputs();
  for (std::size_t t = 0; t < trials.size(); ++t)
    for (std::size_t k = 0; k < outs.size(); ++k) {
      const std::string cname = trials[t]["case"];
      if (static_cast<int>(t) >= static_cast<int>(p.cases.size())) break; // one per case is enough
      ev.reference_errors.push_back({cname, outs[k]->name,
                                     eval::measure_reference_error(*outs[k], oracle_out.at({t, 0, k}), ref_out.at({t, 0, k}))});
    }

  // 4. The candidate, alone in its worker. Each output is judged as it arrives and dropped
  // (ten calls of a 4096x65536 softmax are 10 GiB), and a trial's truth once both its calls
  // are judged, unless a timed call is re-verified against it later.
  std::set<int> recheck_trials;
  for (auto& r : rechecks) recheck_trials.insert(r["trial"].get<int>());
  std::map<output_key, eval::host_tensor> first_call; // run 0's output, until run 1 is compared with it
  bool any_output = false;
  double judge_s = 0;
  auto judge_output = [&](int t, int run, std::size_t k, eval::host_tensor got) {
    if (t < 0 || t >= static_cast<int>(trials.size()) || k >= outs.size() || run < 0 || run > 1) return;
    any_output = true;
    const std::size_t want = static_cast<std::size_t>(outs[k]->numel()) * dtype_size(outs[k]->dtype);
    if (got.bytes.size() != want) {
      add_check({.name = "protocol_error", .passed = false,
                 .message = fmt::format("output '{}' arrived with {} bytes, expected {}", outs[k]->name,
                                        got.bytes.size(), want)});
      return;
    }
    const auto truth_o = oracle_out.find({t, 0, k}), truth_r = ref_out.find({t, 0, k});
    if (truth_o == oracle_out.end() || truth_r == ref_out.end()) { // dropped: this call was judged already
      add_check({.name = "protocol_error", .passed = false,
                 .message = fmt::format("output '{}' of trial {} arrived a second time", outs[k]->name, t)});
      return;
    }
    const std::string cname = trials[t]["case"];
    for (auto& c : eval::compare_output(*outs[k], p.tolerance, got, truth_o->second, truth_r->second)) {
      c.case_name = cname;
      c.trial = t;
      c.run = run;
      add_check(std::move(c));
    }
    if (run == 0) {
      if (p.tolerance.deterministic) first_call[{t, 0, k}] = std::move(got);
      return;
    }
    auto first = first_call.find({t, 0, k});
    if (p.tolerance.deterministic && first != first_call.end() && first->second.bytes.size() == got.bytes.size()) {
      auto c = eval::compare_repeat(*outs[k], first->second, got);
      c.case_name = cname;
      c.trial = t;
      c.run = 1;
      add_check(std::move(c));
    }
    if (first != first_call.end()) first_call.erase(first);
    if (!recheck_trials.count(t)) {
      oracle_out.erase({t, 0, k});
      ref_out.erase({t, 0, k});
    }
  };
  auto verify = run_worker(
      exe,
      {{"role", "verify"}, {"problem", problem_path}, {"device", lease.ordinal},
       {"libraries", {{"candidate", cand.library.string()}}}, {"trials", trials}, {"canary_seed", rng()}},
      timeout, 64 * 1024, {}, [&](message& m) {
        const std::string type = m.header["type"];
        if (type == "error") {
          eval::check_result c{.name = m.header.value("reason", "load_failed"), .passed = false,
                               .message = m.header.value("message", "")};
          if (c.name == "load_failed") c.message = fmt::format("{}: {}", candidate_source.string(), c.message);
          add_check(c);
        } else if (type == "check") {
          eval::check_result c{.name = m.header["name"], .trial = m.header.value("trial", -1),
                               .run = m.header.value("run", 0), .passed = m.header.value("passed", false),
                               .message = m.header.value("message", "")};
          if (m.header.contains("detail")) c.detail = m.header["detail"];
          if (c.trial >= 0 && c.trial < static_cast<int>(trials.size())) c.case_name = trials[c.trial]["case"];
          add_check(c);
        } else if (type == "output") {
          const auto t0 = clock::now();
          judge_output(m.header["trial"], m.header["run"], m.header["index"], tensor_of(m));
          judge_s += since(t0);
        }
      });
  ev.worker_output = verify.output;
  ev.phases["verify_s"] = since(t_phase) - judge_s;
  t_phase = clock::now();
  if (auto f = process_failure(verify, "a verification call", ev.trials)) add_check(*f);
  ev.phases["judge_s"] = judge_s;

  // The verdict: the highest-priority failing check; ties go to the earliest trial.
  const eval::check_result* worst = nullptr;
  for (auto& c : ev.checks)
    if (!c.passed && (!worst || eval::check_priority(c.name) < eval::check_priority(worst->name))) worst = &c;
  if (!worst && !any_output) {
    add_check({.name = "exited_early", .passed = false, .message = "the verify worker returned no outputs"});
    worst = &ev.checks.back();
  }
  if (worst) {
    fail_with(*worst);
    return ev;
  }
  ev.status = "passed";
  ev.message = fmt::format("all {} checks passed on {} trials over {} input distributions", ev.checks.size(),
                           trials.size(), p.cases.size());

  // 5. compute-sanitizer, when asked: after verification (nothing is sanitized that is
  // already wrong), before timing (a candidate it fails is not timed).
  if (opts.sanitize) {
    sanitize_options so{.worker_exe = exe, .seed = opts.seed, .device = lease.ordinal};
    so.on_check = [&](const eval::check_result& c) { add_check(c); };
    if (auto why = sanitize_unavailable(p, so); !why.empty()) {
      ev.sanitize = {{"skipped", why}};
    } else {
      auto s = sanitize_library(p, cand.library, so);
      nlohmann::json names = nlohmann::json::array();
      for (auto& c : s.checks) names.push_back(c.name);
      ev.sanitize = {{"passed", s.passed()}, {"checks", names}};
      if (!s.skipped.empty()) ev.sanitize = {{"skipped", s.skipped}};
      for (auto& c : s.checks)
        if (!c.passed) {
          fail_with(c);
          return ev;
        }
    }
    ev.phases["sanitize_s"] = since(t_phase);
    t_phase = clock::now();
  }

  // 6. Timing, only for a correct candidate.
  if (!opts.time) return ev;
  const double budget = opts.time_budget_s > 0 ? opts.time_budget_s : p.eval.time_budget_s;
  nlohmann::json subjects = nlohmann::json::array({{{"name", "candidate"}, {"library", cand.library.string()}}});
  if (!torch_ref) subjects.push_back({{"name", "reference"}, {"library", ref.library.string()}});
  for (std::size_t i = 0; i < base.size(); ++i)
    subjects.push_back({{"name", p.baselines[i].name}, {"library", base[i].library.string()}});
  auto timed = run_worker(exe,
                          {{"role", "time"}, {"problem", problem_path}, {"device", lease.ordinal}, {"subjects", subjects},
                           {"timing",
                            {{"budget_s", budget}, {"min_samples", p.eval.min_samples},
                             {"max_samples", p.eval.max_samples}, {"target_rel_ci", p.eval.target_rel_ci},
                             {"seed", rng()}}},
                           {"rechecks", rechecks}},
                          timeout + 4 * budget);
  std::map<output_key, eval::host_tensor> timed_out;
  for (auto& m : timed.messages) {
    if (m.header["type"] == "output") { // a re-verified timed call: "trial" is its place in rechecks
      timed_out[{m.header["trial"], 0, m.header["index"]}] = tensor_of(m);
    } else if (m.header["type"] == "error") {
      add_check({.name = m.header.value("reason", "load_failed"), .passed = false,
                 .message = "during timing: " + m.header.value("message", "")});
    } else if (m.header["type"] == "timing") {
      const std::string subject = m.header["subject"];
      const int rc = m.header.value("failed_rc", 0);
      if (rc != 0) {
        add_check({.name = "returned_error", .passed = false,
                   .message = fmt::format("the {} returned {} during timing", subject, rc)});
        continue;
      }
      auto samples = m.header["samples"].get<std::vector<double>>();
      if (samples.empty()) continue;
      auto s = eval::summarize(subject, samples, p.eval.target_rel_ci);
      if (opts.observer.on_timing) opts.observer.on_timing(s);
      ev.timings.push_back(s);
    }
  }
  if (auto f = process_failure(timed, "timing", ev.trials)) add_check(*f);
  // A [torch] problem's reference is eager PyTorch, timed (with torch.compile) by the
  // helper with the same protocol; a baseline that cannot be timed is a note, not a failure.
  if (torch_ref && ev.timing("candidate")) {
    std::vector<bridge::torch_subject> ts{{"reference", "eager", ""}};
    if (p.torch->compile) ts.push_back({"torch_compile", "compile", ""});
    bridge::torch_timing_config tc{.budget_s = budget, .min_samples = p.eval.min_samples,
                                   .max_samples = p.eval.max_samples, .target_rel_ci = p.eval.target_rel_ci,
                                   .seed = rng()};
    for (auto& t : torch_baseline_timings(p, ts, tc, lease.ordinal, device_description, opts.reuse_torch_baselines,
                                          timeout + 4 * budget + 600, ev.phases)) {
      if (!t.error.empty() || t.samples.empty()) {
        ev.review.push_back(fmt::format("PyTorch {} could not be timed: {}", t.subject == "reference" ? "eager" : t.subject,
                                        t.error.empty() ? "no samples" : t.error));
        continue;
      }
      auto s = eval::summarize(t.subject, t.samples, p.eval.target_rel_ci);
      if (opts.observer.on_timing) opts.observer.on_timing(s);
      ev.timings.push_back(s);
    }
  }
  ev.phases["timing_s"] = since(t_phase);

  // Timed calls re-verified: any check failing on their outputs is a timed_output failure.
  static constexpr const char* recheck_where[] = {"an early timed call, this trial's inputs in its timed buffers",
                                                  "a timed call after sampling, this trial's inputs in the timed buffers",
                                                  "a timed call after sampling, this trial's inputs in new buffers"};
  for (std::size_t i = 0; i < rechecks.size(); ++i) {
    const int t = rechecks[i]["trial"];
    eval::check_result verdict{
        .name = "timed_output", .case_name = rechecks[i]["case"].get<std::string>(), .trial = t, .passed = true};
    bool seen = false;
    for (std::size_t k = 0; k < outs.size(); ++k) {
      auto it = timed_out.find({static_cast<int>(i), 0, k});
      if (it == timed_out.end()) continue; // timing stopped early: already a failed check
      seen = true;
      const std::size_t want = static_cast<std::size_t>(outs[k]->numel()) * dtype_size(outs[k]->dtype);
      if (it->second.bytes.size() != want) {
        verdict.passed = false;
        verdict.message = fmt::format("{}: output '{}' arrived with {} bytes", recheck_where[i], outs[k]->name,
                                      it->second.bytes.size());
        break;
      }
      for (auto& c : eval::compare_output(*outs[k], p.tolerance, it->second, oracle_out.at({t, 0, k}),
                                          ref_out.at({t, 0, k})))
        if (!c.passed && verdict.passed) {
          verdict.passed = false;
          verdict.output = c.output;
          verdict.message = fmt::format("{} ({} there): {}", recheck_where[i], c.name, c.message);
          verdict.detail = {{"check", c.name}, {"where", recheck_where[i]}, {"detail", c.detail}};
        }
    }
    if (seen) add_check(verdict);
  }

  // The roofline of the device's measured ceilings, when calibrated. A time well under
  // the floor is not a record: the kernel skipped work or fooled the clock.
  if (auto ceil = device::load_ceilings(device_description); ceil && ev.timing("candidate")) {
    constexpr double floor_margin = 0.8; // a kernel may beat cudaMemcpy's bandwidth a little, never by 20%
    auto rc = device::roofline_of(*ceil, p.work.flops, p.work.min_bytes, p.dtype, ev.timing("candidate")->median_s);
    if (rc) {
      nlohmann::json r{{"floor_s", rc->floor_s}, {"bound", rc->bound}, {"candidate_fraction", rc->fraction},
                       {"ceilings", device::to_json(*ceil)}};
      if (auto* ref_t = ev.timing("reference"))
        if (auto rr = device::roofline_of(*ceil, p.work.flops, p.work.min_bytes, p.dtype, ref_t->median_s))
          r["reference_fraction"] = rr->fraction;
      ev.roofline = r;
      eval::check_result c{.name = "impossible_time", .passed = rc->fraction <= 1.0 / floor_margin};
      c.detail = r;
      if (!c.passed)
        c.message = fmt::format("median {:.4g} s is {:.2f}x faster than the device's physical floor {:.4g} s ({}-bound); "
                                "the kernel skipped work or fooled the timer",
                                ev.timing("candidate")->median_s, rc->fraction, rc->floor_s, rc->bound);
      add_check(c);
    }
  }
  // Not a failure, a flag: a speedup this large is more often a hole in the problem (or in
  // kforge) than a kernel; it is recorded and shown so that a person looks.
  if (auto sp = ev.speedup(); sp && *sp > p.eval.review_speedup) {
    ev.review.push_back(fmt::format("speedup {:.1f}x over the reference is above the problem's review threshold "
                                    "({:g}x, [eval] review_speedup): check the candidate by hand before trusting it",
                                    *sp, p.eval.review_speedup));
    add_check({.name = "review", .passed = true, .message = ev.review.back(), .detail = {{"speedup", *sp}}});
  }
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
