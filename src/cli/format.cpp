#include "cli/format.hpp"
#include "core/error.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <cmath>
#include <map>
#include <set>

namespace kforge::cli {

std::string json_text(const nlohmann::json& j, int indent) {
  return j.dump(indent, ' ', false, nlohmann::json::error_handler_t::replace);
}

double parse_seconds(const std::string& text) {
  std::size_t used = 0;
  double v = 0;
  try {
    v = std::stod(text, &used);
  } catch (const std::exception&) {
    KFORGE_THROW(usage, "'{}' is not a time: write 0.8ms, 120us, 35ns, 1.5s or seconds", text);
  }
  const std::string unit = text.substr(used);
  if (unit.empty() || unit == "s") return v;
  if (unit == "ms") return v * 1e-3;
  if (unit == "us") return v * 1e-6;
  if (unit == "ns") return v * 1e-9;
  KFORGE_THROW(usage, "'{}': unknown unit '{}'; use s, ms, us or ns", text, unit);
}

std::string format_seconds(double s) {
  if (!(s > 0)) return "-";
  if (s >= 1) return fmt::format("{:.3f} s", s);
  if (s >= 1e-3) return fmt::format("{:.3f} ms", s * 1e3);
  if (s >= 1e-6) return fmt::format("{:.2f} us", s * 1e6);
  return fmt::format("{:.0f} ns", s * 1e9);
}

namespace {
// What ran, per subject (ev.kernels, worker/kernel_trace.hpp): the kernels by GPU time, with
// the library a name says it comes from, so a "custom kernel" that is cuBLAS shows as such.
// `ev`'s medians: a subject's time outside its kernels (its launch path: a Python call's interpreter,
// the host side of every launch, the timer's device sync), GPU time taken from untimed, warm calls.
std::string kernels_lines(const nlohmann::json& kernels, const worker::evaluation& ev) {
  std::string s;
  for (const char* subject : {"candidate", "reference"}) {
    if (!kernels.contains(subject) || !kernels[subject].is_array() || kernels[subject].empty()) continue;
    const auto& list = kernels[subject];
    double total = 0, library = 0, launches = 0;
    std::set<std::string> libs;
    for (auto& k : list) {
      total += k["gpu_s"].get<double>();
      launches += k["launches"].get<double>();
      if (!k["library"].get<std::string>().empty()) {
        library += k["gpu_s"].get<double>();
        libs.insert(k["library"].get<std::string>());
      }
    }
    std::string names;
    for (std::size_t i = 0; i < list.size() && i < 3; ++i) {
      std::string n = list[i]["name"];
      if (n.size() > 48) n = n.substr(0, 45) + "...";
      const std::string lib = list[i]["library"];
      names += fmt::format("{}{} {}{}", i ? "; " : "", n, format_seconds(list[i]["gpu_s"].get<double>()),
                           lib.empty() ? "" : " [" + lib + "]");
    }
    if (list.size() > 3) names += fmt::format("; {} more", list.size() - 3);
    std::string where = total > 0 && library >= 0.5 * total
                            ? fmt::format(" ({:.0f}% in library kernels: {})", 100 * library / total, fmt::join(libs, ", "))
                            : "";
    s += fmt::format("  {:<8} {} per call: {:.3g} launches, {} GPU{}: {}\n", s.empty() ? "kernels" : "", subject,
                     launches, format_seconds(total), where, names);
    if (const auto* t = ev.timing(subject); t && total > 0 && t->median_s > total)
      s += fmt::format("           {} median {}: {} more than its kernels' GPU time in warm calls (launches, host code, cold caches, the timer's sync)\n",
                       subject, format_seconds(t->median_s), format_seconds(t->median_s - total));
  }
  return s;
}

// One line on what confined the workers: layers in force of all there are, per role where the
// roles differ; what is missing, and why, always named.
std::string confinement_line(const nlohmann::json& by_role) {
  if (!by_role.is_object() || by_role.empty()) return "";
  std::map<std::string, std::vector<std::string>> same; // summary -> roles
  for (auto& [role, c] : by_role.items()) {
    std::string summary;
    if (c.contains("unconfined")) {
      summary = "NOT CONFINED: " + c["unconfined"].get<std::string>();
    } else if (c.contains("layers") && c["layers"].is_array()) {
      int on = 0;
      std::string missing;
      for (auto& l : c["layers"]) {
        if (l.value("active", false)) ++on;
        else missing += fmt::format("; {} missing ({})", l.value("name", "?"), l.value("detail", ""));
      }
      summary = fmt::format("{} of {} layers{}", on, c["layers"].size(), missing);
    } else {
      summary = "no report: " + c.dump();
    }
    same[summary].push_back(role);
  }
  std::string s;
  for (auto& [summary, roles] : same)
    s += fmt::format("  confined {}  ({})\n", summary, fmt::join(roles, ", "));
  return s;
}

std::string timing_line(const eval::timing_summary& t) {
  return fmt::format("{} {}(n={}{})", format_seconds(t.median_s),
                     t.ci_rel >= 0 ? fmt::format("±{:.1f}% ", 100 * t.ci_rel) : std::string(), t.samples,
                     t.converged ? "" : ", budget ended before 1% CI");
}
} // namespace

std::string format_evaluation(const worker::evaluation& ev, const problem::problem& p, int64_t id,
                              const std::string& label) {
  std::string s = fmt::format("kforge eval {} {}  (evaluation #{}, {})\n", p.name, label, id, ev.device);
  double build_s = 0;
  int cached = 0;
  for (auto& b : ev.builds) {
    build_s += b.artifact.duration_s;
    cached += b.artifact.cached;
  }
  s += fmt::format("  build    {} ({:.2f} s compiling, {} of {} from cache)\n",
                   ev.status == "build_failed" ? "FAILED" : "ok", build_s, cached, ev.builds.size());
  int failed = 0;
  for (auto& c : ev.checks) failed += !c.passed;
  if (ev.passed()) {
    s += fmt::format("  verify   PASSED  {} checks, {} trials over {} input distributions\n", ev.checks.size(),
                     ev.trials.size(), p.cases.size());
  } else {
    s += fmt::format("  verify   FAILED  {}  ({} of {} checks failed)\n", ev.status, failed, ev.checks.size());
    s += fmt::format("           {}\n", ev.message);
  }
  if (ev.sanitize.contains("skipped")) s += fmt::format("  sanitize skipped: {}\n", ev.sanitize["skipped"].get<std::string>());
  for (auto& c : ev.checks)
    if (c.name.rfind("sanitize_", 0) == 0)
      s += fmt::format("  sanitize {:<10} {}\n", c.name.substr(9), c.passed ? "clean" : c.message);
  if (p.tolerance.precision != "nominal")
    s += fmt::format("  precision {} (opted in by the problem: the error floor counts {} ulps)\n", p.tolerance.precision,
                     p.tolerance.precision);
  if (!ev.reference_errors.empty() && ev.passed()) {
    std::string errs;
    for (auto& r : ev.reference_errors)
      errs += fmt::format("{}{} {:.2g}", errs.empty() ? "" : ", ", r.case_name, r.error.max_abs);
    s += fmt::format("  ref err  max |reference - float64 oracle|: {}\n", errs);
  }
  if (auto* c = ev.timing("candidate")) {
    s += fmt::format("  time     candidate {}\n", timing_line(*c));
    // A [torch] problem's reference is eager PyTorch; its baseline torch_compile is torch.compile.
    auto label = [&](const std::string& subject) -> std::string {
      if (!p.torch) return subject;
      if (subject == "reference") return "eager";
      if (subject == "torch_compile") return "compile";
      return subject;
    };
    for (auto& t : ev.timings)
      if (t.subject != "candidate")
        s += fmt::format("           {:<9} {}  -> candidate {:.2f}x\n", label(t.subject), timing_line(t),
                         t.median_s / c->median_s);
    if (auto sp = ev.speedup())
      s += fmt::format("  speedup  {:.2f}x over {}\n", *sp, p.torch ? "eager PyTorch (the reference)" : "the reference");
    if (ev.phases.contains("torch_baselines"))
      s += fmt::format("  pytorch  eager{} {}\n", p.torch && p.torch->compile ? " and torch.compile" : "",
                       ev.phases["torch_baselines"].get<std::string>() == "measured"
                           ? std::string("measured now, in the bridge's timer (docs/pytorch.md)")
                           : "reused from a measurement under an hour old (" +
                                 ev.phases["torch_baselines"].get<std::string>() + ")");
    if (ev.engine.contains("host_spin_us")) { // worker/command_input.hpp
      const auto us = ev.engine["host_spin_us"].get<long long>();
      s += us > 0 ? fmt::format("  host     timing workers wait for each sample awake (polling up to {} ms), as a busy "
                                "launching thread would\n", us / 1000.0)
                  : std::string("  host     timing workers sleep between samples (KFORGE_HOST_SPIN_US=0, or under 4 "
                                "CPUs): each call's launch starts from an idle core\n");
    }
    if (const auto& pin = ev.engine.value("timing_cpus", nlohmann::json()); pin.is_array() && pin.size() == 2)
      s += fmt::format("  host     timing threads pinned (KFORGE_TIMING_CPUS): the candidate's to CPU {}, the "
                       "reference's to CPU {}\n", pin[0].get<int>(), pin[1].get<int>());
    std::string rate;
    if (p.work.min_bytes > 0) rate += fmt::format("{:.1f} GB/s", p.work.min_bytes / c->median_s * 1e-9);
    if (p.work.flops > 0) rate += fmt::format("{}{:.2f} GFLOP/s", rate.empty() ? "" : ", ", p.work.flops / c->median_s * 1e-9);
    if (!rate.empty()) s += fmt::format("  rate     {} (from the problem's work counts)\n", rate);
    if (!ev.roofline.is_null())
      s += fmt::format("  roofline {:.1f}% of the {}-bound floor {} (reference {:.1f}%)\n",
                       100 * ev.roofline["candidate_fraction"].get<double>(), ev.roofline["bound"].get<std::string>(),
                       format_seconds(ev.roofline["floor_s"].get<double>()),
                       100 * ev.roofline.value("reference_fraction", 0.0));
  }
  s += kernels_lines(ev.kernels, ev);
  s += confinement_line(ev.confinement);
  if (ev.engine.value("path", "") == "device") {
    const auto& l = ev.engine.value("launches", nlohmann::json::object());
    s += fmt::format("  engine   on the GPU: inputs, truth and judging on the device (a judge process); launches {}\n",
                     l.value("watched", false) ? "watched for side streams"
                                               : "not watched (" + l.value("why", std::string("unknown")) + ")");
  } else if (ev.engine.contains("why") && p.backend == problem::backend_kind::cuda) {
    s += fmt::format("  engine   through the host: {}\n", ev.engine["why"].get<std::string>());
  }
  for (auto& r : ev.review) s += fmt::format("  REVIEW   {}\n", r);
  return s;
}

} // namespace kforge::cli
