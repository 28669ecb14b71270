#include "worker/timing.hpp"

#include "bridge/torch_helper.hpp"
#include "bridge/torch_reference.hpp"
#include "core/fs.hpp"
#include "core/hash.hpp"
#include "device/calibration.hpp"
#include "eval/statistics.hpp"
#include "eval/timer.hpp"
#include "core/error.hpp"
#include "core/fd_passing.hpp"
#include "worker/candidate_run.hpp"
#include "worker/command_input.hpp"

#include <fmt/format.h>

#include <unistd.h>

#include <chrono>
#include <functional>
#include <optional>
#include <random>

namespace kforge::worker {
namespace {

// The PyTorch baselines' samples, timed now or (when `reuse`) taken from a measurement of
// the same problem and module on the same device model less than an hour old: eager and
// torch.compile do not change between a search's candidates, and compile alone takes tens
// of seconds. `phases` says which: torch_baselines = "measured" or "cached <unix time>".
std::vector<bridge::torch_timing> torch_baseline_timings(
    const problem::problem& p, const std::vector<bridge::torch_subject>& subjects, const std::string& device_model,
    bool reuse, const std::function<std::vector<bridge::torch_timing>()>& measure, nlohmann::json& phases) {
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
  auto out = measure();
  phases["torch_baselines"] = "measured";
  nlohmann::json j{{"at", now}, {"subjects", nlohmann::json::array()}};
  for (auto& t : out) j["subjects"].push_back({{"subject", t.subject}, {"samples", t.samples}, {"error", t.error}});
  std::filesystem::create_directories(file.parent_path(), ec);
  write_file_atomic(file, j.dump());
  return out;
}

} // namespace

namespace {

// A timing worker stopped answering (it ended, broke the protocol, or hung): timing stops.
struct worker_stopped {};

// How many input sets the timing workers rotate through.
constexpr int rotations = 3;
// Calls per subject discarded before sampling.
constexpr int warmup = 2;

// A subject timed in `w`: one command, one "sample" frame.
eval::sampler remote(worker_session& w, const std::string& name) {
  return {name, rotations, [&w, name](int r) {
            if (!w.send({{"cmd", "sample"}, {"subject", name}, {"rotation", r}})) throw worker_stopped{};
            auto m = w.wait_for("sample");
            if (!m) throw worker_stopped{};
            return eval::sample{m->value("seconds", 0.0), m->value("rc", -1)};
          }};
}

// The trusted worker's subjects: the reference (unless [torch]) and every baseline.
nlohmann::json trusted_subjects(const problem::problem& p, const role_artifacts& builds) {
  nlohmann::json trusted = nlohmann::json::array();
  if (!p.torch) trusted.push_back({{"name", "reference"}, {"library", builds.reference.library.string()}});
  for (std::size_t i = 0; i < builds.baselines.size(); ++i)
    trusted.push_back({{"name", p.baselines[i].name}, {"library", builds.baselines[i].library.string()}});
  return trusted;
}

// The "timing" part of both timing workers' jobs: the same seed gives both the same inputs;
// the same host_spin_us has both wait for their samples alike (worker/command_input.hpp).
nlohmann::json timing_params(const problem::problem& p, std::uint64_t seed) {
  nlohmann::json t{{"seed", seed}, {"rotations", rotations}, {"warmup", warmup}, {"min_samples", p.eval.min_samples},
                   {"host_spin_us", default_host_spin().count()}};
  if (auto cpus = timing_cpus()) t["pin_cpus"] = {cpus->first, cpus->second};
  return t;
}

// A timing step may take the budget four times over (warm-up and rechecks around it).
double time_step_s(const worker_context& ctx, double budget_s) { return ctx.timeout_s + 4 * budget_s; }

// A timing worker's "error" frame as the failed check it is (`who`: which worker, for the message).
std::optional<eval::check_result> timing_error(const message& m, const char* who) {
  if (m.header["type"] != "error") return std::nullopt;
  return eval::check_result{.name = m.header.value("reason", "load_failed"), .passed = false,
                            .message = fmt::format("during timing{}: {}", who, m.header.value("message", ""))};
}

struct interleaved {
  bool complete = false; // both workers were ready and answered every sample asked of them
  std::vector<eval::timing_samples> results;
};
// Samples until the stopping rule holds, once both workers are ready.
interleaved sample_both(worker_session& cand, worker_session* ref, const std::vector<eval::sampler>& samplers,
                        const problem::problem& p, double budget_s) {
  interleaved out;
  const eval::timing_config cfg{.budget_s = budget_s, .warmup = warmup, .min_samples = p.eval.min_samples,
                                .max_samples = p.eval.max_samples, .target_rel_ci = p.eval.target_rel_ci};
  out.complete = cand.wait_for("ready").has_value() && (!ref || ref->wait_for("ready").has_value());
  if (out.complete) try {
      out.results = eval::interleave(samplers, cfg);
    } catch (const worker_stopped&) {
      out.complete = false; // its outcome says why
    }
  return out;
}

// Records each subject's summary, or its failure; @return whether a call failed.
bool record_results(const std::vector<eval::timing_samples>& results, const problem::problem& p, recorder& rec) {
  bool failed = false;
  for (auto& r : results) {
    if (r.failed_rc != 0) {
      failed = true;
      rec.check({.name = "returned_error", .passed = false,
                 .message = fmt::format("the {} returned {} during timing", r.subject, r.failed_rc)});
    } else if (!r.samples.empty()) {
      rec.timing(eval::summarize(r.subject, r.samples, p.eval.target_rel_ci));
    }
  }
  return failed;
}

// The trusted worker's end: not the candidate's code, but its doing as far as anyone can tell
// (the reference timed in that worker before, and a candidate that slowed or starved it is the
// likely cause).
// What each worker's subjects launched, untimed, into ev.kernels (CUDA problems only).
// `cuda`: a CPU problem's worker answers only why it lists nothing, which is not worth recording.
void list_kernels(worker_session& w, const char* who, recorder& rec, bool cuda) {
  if (!w.send({{"cmd", "kernels"}, {"calls", 3}})) return;
  const auto m = w.wait_for("kernels");
  if (!m) return;
  // A named copy: items() of the temporary value() returns would outlive it in the loop.
  const nlohmann::json subjects = m->value("subjects", nlohmann::json::object());
  for (auto& [name, list] : subjects.items()) rec.ev.kernels[name] = list;
  if (m->contains("why") && cuda) rec.ev.kernels[std::string("why_") + who] = (*m)["why"];
}

// `asked`: the finish command went earlier (so that its end overlapped the candidate's).
void end_trusted(worker_session& ref, recorder& rec, bool asked = false) {
  if (!asked) ref.send({{"cmd", "finish"}});
  const auto r_end = ref.finish();
  rec.ev.confinement["time_trusted"] = r_end.confinement;
  if (auto f = process_failure(r_end, "timing", rec.ev.trials)) {
    f->message = fmt::format("the reference's timing worker, which loads no candidate code, {} during timing: {}",
                             r_end.end == worker_end::timeout ? "hung" : worker_end_name(r_end.end), r_end.detail);
    rec.check(*f);
  }
}

} // namespace

std::map<output_key, eval::host_tensor> time_subjects(const worker_context& ctx, const role_artifacts& builds,
                                                      const nlohmann::json& rechecks, double budget_s,
                                                      std::uint64_t seed, recorder& rec) {
  const auto& p = ctx.p;
  // Two workers on the same device at once: the candidate alone in one; the reference and
  // the baselines in the other, which never loads candidate code, so that nothing the
  // candidate does in its process (patching their code, their data, their clock) reaches
  // them. The same seed gives both the same inputs.
  const auto trusted = trusted_subjects(p, builds);
  const auto timing = timing_params(p, seed);
  const auto job = [&](const char* role, nlohmann::json subjects, nlohmann::json re) {
    return nlohmann::json{{"role", role},       {"problem", p.dir.string()}, {"device", ctx.device},
                          {"subjects", subjects}, {"timing", timing},         {"rechecks", re}};
  };
  std::map<output_key, eval::host_tensor> timed_out;
  auto errors_become_checks = [&rec](const char* who) {
    return [&rec, who](message& m) {
      if (auto c = timing_error(m, who)) rec.check(std::move(*c));
    };
  };
  const double step_s = time_step_s(ctx, budget_s);
  auto on_candidate = errors_become_checks("");
  worker_session cand(
      ctx.exe,
      job("time", {{{"name", "candidate"}, {"library", builds.candidate.library.string()}}}, rechecks),
      {.timeout_s = step_s,
       .sink =
           [&](message& m) {
             if (m.header["type"] == "output") // a re-verified timed call: "trial" is its place in rechecks
               timed_out[{m.header["trial"], 0, m.header["index"]}] = tensor_of(m);
             on_candidate(m);
           },
       .problem = &p});
  std::optional<worker_session> ref;
  if (!trusted.empty())
    ref.emplace(ctx.exe, job("time_trusted", trusted, nlohmann::json::array()),
                worker_options{.timeout_s = step_s, .sink = errors_become_checks(" (the reference's worker)"),
                               .problem = &p});

  std::vector<eval::sampler> samplers{remote(cand, "candidate")};
  for (auto& s : trusted) samplers.push_back(remote(*ref, s["name"]));
  const auto [complete, results] = sample_both(cand, ref ? &*ref : nullptr, samplers, p, budget_s);
  const bool failed = record_results(results, p, rec) || !complete;
  // On the CPU too, though it lists nothing there: the exchange is then tested without a GPU.
  if (complete && !failed) {
    list_kernels(cand, "candidate", rec, p.backend == problem::backend_kind::cuda);
    if (ref) list_kernels(*ref, "reference", rec, p.backend == problem::backend_kind::cuda);
  }
  if (complete) cand.send({{"cmd", "finish"}, {"rechecks", !failed}});
  const auto c_end = cand.finish();
  rec.ev.confinement["time"] = c_end.confinement;
  if (auto f = process_failure(c_end, "timing", rec.ev.trials)) rec.check(*f);
  if (ref) end_trusted(*ref, rec);
  return timed_out;
}

namespace {

// Where each re-verified timed call ran (the rechecks' order).
constexpr const char* recheck_where[] = {"an early timed call, this trial's inputs in its timed buffers",
                                         "a timed call after sampling, this trial's inputs in the timed buffers",
                                         "a timed call after sampling, this trial's inputs in new buffers"};

// One timed_output verdict from the judge's checks of a re-verified call's outputs.
eval::check_result timed_verdict(std::size_t place, const nlohmann::json& recheck,
                                 const std::vector<eval::check_result>& checks) {
  eval::check_result v{.name = "timed_output", .case_name = recheck["case"].get<std::string>(),
                       .trial = recheck["trial"].get<int>(), .passed = true};
  for (auto& c : checks)
    if (!c.passed) {
      v.passed = false;
      v.output = c.output;
      v.message = fmt::format("{} ({} there): {}", recheck_where[place], c.name, c.message);
      v.detail = {{"check", c.name}, {"where", recheck_where[place]}, {"detail", c.detail}};
      break;
    }
  return v;
}

} // namespace

struct device_timing::state {
  const worker_context& ctx;
  device_judge& dj;
  double budget_s;
  std::uint64_t seed;
  nlohmann::json trusted = nlohmann::json::array();
  std::vector<std::pair<std::string, std::uint64_t>> rotation_inputs;
  std::vector<eval::check_result> early_errors; // "error" frames, recorded once run() starts
  recorder* rec = nullptr;                      // set by run()
  std::unique_ptr<worker_session> cand, ref;

  state(const worker_context& c, device_judge& d, double b, std::uint64_t s) : ctx(c), dj(d), budget_s(b), seed(s) {}
  message_sink errors(const char* who) {
    return [this, who](message& m) {
      auto c = timing_error(m, who);
      if (!c) return;
      if (rec) rec->check(std::move(*c));
      else early_errors.push_back(std::move(*c));
    };
  }
};

namespace {
nlohmann::json candidate_time_job(const worker_context& ctx, const std::filesystem::path& library) {
  return {{"role", "time"},
          {"problem", ctx.p.dir.string()},
          {"subjects", {{{"name", "candidate"}, {"library", library.string()}}}},
          {"shared", true}};
}
} // namespace

std::unique_ptr<deferred_worker> defer_time_worker(const worker_context& ctx, const std::filesystem::path& library,
                                                   double budget_s, const std::vector<std::string>& warm) {
  auto job = candidate_time_job(ctx, library);
  job["warm_modules"] = warm;
  return std::make_unique<deferred_worker>(ctx.exe, job,
                                           worker_options{.timeout_s = time_step_s(ctx, budget_s), .problem = &ctx.p});
}

device_timing::device_timing(const worker_context& ctx, const role_artifacts& builds, device_judge& dj, double budget_s,
                             std::uint64_t seed, std::unique_ptr<deferred_worker> early)
    : m(std::make_unique<state>(ctx, dj, budget_s, seed)) {
  const auto& p = ctx.p;
  m->trusted = trusted_subjects(p, builds); // [torch]: the baselines alone (eager PyTorch is timed by the bridge)
  const auto timing = timing_params(p, seed);
  // The rotations' inputs: the judge draws them into sets 1..rotations as the trusted worker
  // draws its own (the first draws of the timing seed), so both time like with like.
  std::mt19937_64 seeds(seed);
  for (int r = 0; r < rotations; ++r) {
    m->rotation_inputs.emplace_back(p.cases[r % p.cases.size()].name, seeds());
    dj.rotation(1 + r, m->rotation_inputs.back().first, m->rotation_inputs.back().second);
  }
  const double step_s = time_step_s(ctx, budget_s);
  const nlohmann::json rest = {{"device", ctx.device}, {"timing", timing}, {"set_bytes", dj.set_bytes()}};
  std::vector<int> fds;
  for (int r = 0; r <= rotations; ++r) fds.push_back(dj.set_fd(1 + r));
  if (early) {
    m->cand = early->complete(rest, fds, m->errors(""));
  } else {
    int sv[2];
    make_fd_socket(sv);
    auto job = candidate_time_job(ctx, builds.candidate.library);
    job.update(rest);
    m->cand = std::make_unique<worker_session>(
        ctx.exe, job, worker_options{.timeout_s = step_s, .sink = m->errors(""), .problem = &p, .share_socket = sv[1]});
    ::close(sv[1]);
    try {
      send_fds(sv[0], "sets", fds);
    } catch (const error&) {
      // the worker is gone already: its outcome says how
    }
    ::close(sv[0]);
  }
  if (m->trusted.empty()) return; // nothing trusted to time beside the candidate
  m->ref = std::make_unique<worker_session>(
      ctx.exe,
      nlohmann::json{{"role", "time_trusted"},
                     {"problem", p.dir.string()},
                     {"device", ctx.device},
                     {"subjects", m->trusted},
                     {"timing", timing},
                     {"libraries", {{"kernels", builds.kernels.library.string()}}}},
      worker_options{.timeout_s = step_s, .sink = m->errors(" (the reference's worker)"), .problem = &p});
}

device_timing::~device_timing() = default;

void device_timing::run(const nlohmann::json& rechecks, recorder& rec) {
  auto& S = *m;
  const auto& p = S.ctx.p;
  auto& dj = S.dj;
  auto& cand = *S.cand;
  S.rec = &rec;
  for (auto& c : S.early_errors) rec.check(std::move(c));
  S.early_errors.clear();
  // The judge's step on the candidate's set: the candidate's worker is stopped meanwhile.
  auto with_candidate_stopped = [&](auto&& step) {
    cand.stop();
    step();
    cand.resume();
  };
  std::vector<std::vector<eval::check_result>> timed_checks(rechecks.size());
  auto collect = [&](std::size_t place) { return [&, place](eval::check_result c) { timed_checks[place].push_back(std::move(c)); }; };
  // One early timed call is re-verified in place: the judge loads a verified trial into that
  // rotation's set, judges what the timed call wrote, and puts the rotation back.
  std::mt19937_64 pick(S.seed ^ 0x7265636865636bull);
  const int early_call = rechecks.empty() ? -1 : static_cast<int>(pick() % (warmup + p.eval.min_samples));
  int candidate_calls = 0;
  const auto plain = remote(cand, "candidate");
  eval::sampler cand_sampler{"candidate", rotations, [&](int r) {
                               const bool recheck = candidate_calls++ == early_call;
                               const int t = recheck ? rechecks[0]["trial"].get<int>() : -1;
                               if (recheck) with_candidate_stopped([&] { dj.load(1 + r, t); });
                               const auto got = plain.take(r);
                               if (recheck && got.rc == 0) dj.snapshot(1 + r);
                               if (recheck)
                                 with_candidate_stopped([&] {
                                   if (got.rc == 0) dj.judge(1 + r, t, 0, true, collect(0));
                                   dj.rotation(1 + r, S.rotation_inputs[r].first, S.rotation_inputs[r].second);
                                 });
                               return got;
                             }};
  std::vector<eval::sampler> samplers{cand_sampler};
  for (auto& s : S.trusted) samplers.push_back(remote(*S.ref, s["name"]));
  const auto t_sampling = timeline::clock::now();
  const auto [complete, results] = sample_both(cand, S.ref.get(), samplers, p, S.budget_s);
  rec.steps.add("timing: sampling (ready waits included)", t_sampling);
  const bool failed = record_results(results, p, rec) || !complete;
  const auto t_rechecks = timeline::clock::now();
  // After sampling: a timed call in rotation 0's set and one in the set never timed before.
  if (complete && !failed && rechecks.size() >= 3)
    for (auto [place, set] : {std::pair{std::size_t{1}, 1}, std::pair{std::size_t{2}, rotations + 1}}) {
      const int t = rechecks[place]["trial"];
      with_candidate_stopped([&] { dj.load(set, t); });
      if (!cand.send({{"cmd", "call"}, {"set", set - 1}})) break;
      const auto msg = cand.wait_for("sample");
      if (!msg) break;
      if (msg->value("rc", -1) != 0) {
        rec.check({.name = "returned_error", .passed = false,
                   .message = fmt::format("the candidate returned {} on a re-verified timed call after sampling",
                                          msg->value("rc", -1))});
        break;
      }
      dj.snapshot(set);
      with_candidate_stopped([&] { dj.judge(set, t, 0, true, collect(place)); });
    }
  rec.steps.add("timing: rechecks after sampling", t_rechecks);
  for (std::size_t i = 0; i < rechecks.size() && i < std::size(recheck_where); ++i)
    if (!timed_checks[i].empty()) rec.check(timed_verdict(i, rechecks[i], timed_checks[i]));
  if (complete && !failed) {
    const auto t_kernels = timeline::clock::now();
    list_kernels(cand, "candidate", rec, true);
    if (S.ref) list_kernels(*S.ref, "reference", rec, true);
    rec.steps.add("timing: kernels traced", t_kernels);
  }
  // Both workers are told to finish before either is waited for: their ends overlap.
  const auto t_end = timeline::clock::now();
  if (S.ref) S.ref->send({{"cmd", "finish"}});
  cand.send({{"cmd", "finish"}});
  const auto c_end = cand.finish();
  rec.ev.confinement["time"] = c_end.confinement;
  if (auto f = process_failure(c_end, "timing", rec.ev.trials)) rec.check(*f);
  if (S.ref) end_trusted(*S.ref, rec, true);
  rec.steps.add("timing: workers end", t_end);
}

void time_torch_reference(const worker_context& ctx, double budget_s, std::uint64_t seed, bool reuse,
                          const std::string& device_model, device_judge* dj, recorder& rec) {
  const auto& p = ctx.p;
  std::vector<bridge::torch_subject> ts{{"reference", "eager", ""}};
  if (p.torch->compile) ts.push_back({"torch_compile", "compile", ""});
  bridge::torch_timing_config tc{.budget_s = budget_s, .min_samples = p.eval.min_samples,
                                 .max_samples = p.eval.max_samples, .target_rel_ci = p.eval.target_rel_ci,
                                 .seed = seed};
  const double timeout_s = ctx.timeout_s + 4 * budget_s + 600; // torch.compile's first compile included
  // On the GPU-resident path the judge draws the rotations into the memory it shares with the
  // helper: no file, no host copy. Else (the host path) they go through a file.
  const bool shared = dj && dj->shares_module();
  const auto measure = [&] {
    rec.ev.phases["torch_inputs"] = shared ? "device" : "file";
    return shared ? dj->time_module(ts, tc, timeout_s) : bridge::torch_time(p, ts, tc, ctx.device, timeout_s);
  };
  for (auto& t : torch_baseline_timings(p, ts, device_model, reuse, measure, rec.ev.phases)) {
    if (!t.error.empty() || t.samples.empty()) {
      rec.ev.review.push_back(fmt::format("PyTorch {} could not be timed: {}",
                                          t.subject == "reference" ? "eager" : t.subject,
                                          t.error.empty() ? "no samples" : t.error));
      continue;
    }
    rec.timing(eval::summarize(t.subject, t.samples, p.eval.target_rel_ci));
  }
}

void check_plausibility(const problem::problem& p, const std::string& device_model, recorder& rec) {
  auto& ev = rec.ev;
  // The roofline of the device's measured ceilings, when calibrated. A time well under
  // the floor is not a record: the kernel skipped work or fooled the clock.
  if (auto ceil = device::load_ceilings(device_model); ceil && ev.timing("candidate")) {
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
      rec.check(c);
    }
  }
  // Not a failure, a flag: a speedup this large is more often a hole in the problem (or in
  // kforge) than a kernel; it is recorded and shown so that a person looks.
  if (auto sp = ev.speedup(); sp && *sp > p.eval.review_speedup) {
    ev.review.push_back(fmt::format("speedup {:.1f}x over the reference is above the problem's review threshold "
                                    "({:g}x, [eval] review_speedup): check the candidate by hand before trusting it",
                                    *sp, p.eval.review_speedup));
    rec.check({.name = "review", .passed = true, .message = ev.review.back(), .detail = {{"speedup", *sp}}});
  }
}

} // namespace kforge::worker
