#include "worker/timing.hpp"

#include "bridge/torch_helper.hpp"
#include "bridge/torch_reference.hpp"
#include "core/fs.hpp"
#include "core/hash.hpp"
#include "device/calibration.hpp"
#include "eval/statistics.hpp"
#include "worker/candidate_run.hpp"

#include <fmt/format.h>

#include <chrono>

namespace kforge::worker {
namespace {

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

std::map<output_key, eval::host_tensor> time_subjects(const worker_context& ctx, const role_artifacts& builds,
                                                      const nlohmann::json& rechecks, double budget_s,
                                                      std::uint64_t seed, recorder& rec) {
  const auto& p = ctx.p;
  nlohmann::json subjects =
      nlohmann::json::array({{{"name", "candidate"}, {"library", builds.candidate.library.string()}}});
  if (!p.torch) subjects.push_back({{"name", "reference"}, {"library", builds.reference.library.string()}});
  for (std::size_t i = 0; i < builds.baselines.size(); ++i)
    subjects.push_back({{"name", p.baselines[i].name}, {"library", builds.baselines[i].library.string()}});
  auto timed = run_worker(ctx.exe,
                          {{"role", "time"}, {"problem", p.dir.string()}, {"device", ctx.device}, {"subjects", subjects},
                           {"timing",
                            {{"budget_s", budget_s}, {"min_samples", p.eval.min_samples},
                             {"max_samples", p.eval.max_samples}, {"target_rel_ci", p.eval.target_rel_ci},
                             {"seed", seed}}},
                           {"rechecks", rechecks}},
                          ctx.timeout_s + 4 * budget_s);
  std::map<output_key, eval::host_tensor> timed_out;
  for (auto& m : timed.messages) {
    if (m.header["type"] == "output") { // a re-verified timed call: "trial" is its place in rechecks
      timed_out[{m.header["trial"], 0, m.header["index"]}] = tensor_of(m);
    } else if (m.header["type"] == "error") {
      rec.check({.name = m.header.value("reason", "load_failed"), .passed = false,
                 .message = "during timing: " + m.header.value("message", "")});
    } else if (m.header["type"] == "timing") {
      const std::string subject = m.header["subject"];
      const int rc = m.header.value("failed_rc", 0);
      if (rc != 0) {
        rec.check({.name = "returned_error", .passed = false,
                   .message = fmt::format("the {} returned {} during timing", subject, rc)});
        continue;
      }
      auto samples = m.header["samples"].get<std::vector<double>>();
      if (samples.empty()) continue;
      rec.timing(eval::summarize(subject, samples, p.eval.target_rel_ci));
    }
  }
  if (auto f = process_failure(timed, "timing", rec.ev.trials)) rec.check(*f);
  return timed_out;
}

void time_torch_reference(const worker_context& ctx, double budget_s, std::uint64_t seed, bool reuse,
                          const std::string& device_model, recorder& rec) {
  const auto& p = ctx.p;
  std::vector<bridge::torch_subject> ts{{"reference", "eager", ""}};
  if (p.torch->compile) ts.push_back({"torch_compile", "compile", ""});
  bridge::torch_timing_config tc{.budget_s = budget_s, .min_samples = p.eval.min_samples,
                                 .max_samples = p.eval.max_samples, .target_rel_ci = p.eval.target_rel_ci,
                                 .seed = seed};
  for (auto& t : torch_baseline_timings(p, ts, tc, ctx.device, device_model, reuse, ctx.timeout_s + 4 * budget_s + 600,
                                        rec.ev.phases)) {
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
