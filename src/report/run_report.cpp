#include "report/run_report.hpp"

#include "build/compiler.hpp"
#include "core/error.hpp"
#include "core/text.hpp"
#include "core/fs.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <map>
#include <set>

namespace kforge::report {

using nlohmann::json;

namespace {

// The same rendering as cli::format_seconds (this module sits below the CLI).
std::string seconds(double s) {
  if (!(s > 0)) return "-";
  if (s >= 1) return fmt::format("{:.3f} s", s);
  if (s >= 1e-3) return fmt::format("{:.3f} ms", s * 1e3);
  if (s >= 1e-6) return fmt::format("{:.2f} us", s * 1e6);
  return fmt::format("{:.0f} ns", s * 1e9);
}

std::string seconds_of(const json& v) { return v.is_number() ? seconds(v.get<double>()) : std::string("-"); }
std::string ratio_of(const json& v) { return v.is_number() ? fmt::format("{:.2f}x", v.get<double>()) : std::string("-"); }

json opt(const std::optional<double>& v) { return v ? json(*v) : json(); }
json opt(const std::optional<int64_t>& v) { return v ? json(*v) : json(); }
json text_or_null(const std::string& s) { return s.empty() ? json() : json(s); }

/// Parses stored JSON text; empty text is `empty`, unparseable text is kept as the string.
json parse_stored(const std::string& text, json empty = json::object()) {
  if (text.empty()) return empty;
  auto j = json::parse(text, nullptr, false);
  return j.is_discarded() ? json(text) : j;
}

std::optional<double> speedup(const std::optional<double>& median, const std::optional<double>& reference) {
  if (median && reference && *median > 0 && *reference > 0) return *reference / *median;
  return std::nullopt;
}

std::string str(const json& j, const char* key) {
  return j.is_object() && j.contains(key) && j[key].is_string() ? j[key].get<std::string>() : std::string();
}

std::string truncate(const std::string& s, std::size_t n) {
  if (s.size() <= n) return s;
  return s.substr(0, n - 1) + "~";
}

/// True for a line `// kforge: launch ...` (the kernel-only form, docs/candidates.md).
bool is_launch_directive(std::string_view line) {
  auto skip_ws = [&] {
    while (!line.empty() && (line.front() == ' ' || line.front() == '\t')) line.remove_prefix(1);
  };
  skip_ws();
  if (!line.starts_with("//")) return false;
  line.remove_prefix(2);
  skip_ws();
  if (!line.starts_with("kforge:")) return false;
  line.remove_prefix(7);
  skip_ws();
  return line.starts_with("launch") && (line.size() == 6 || line[6] == ' ' || line[6] == '\t');
}

std::vector<std::string> launch_directives(const std::string& source) {
  std::vector<std::string> out;
  for (auto line : lines_of(source)) {
    if (line.ends_with('\r')) line.remove_suffix(1);
    if (is_launch_directive(line)) out.emplace_back(line.substr(line.find_first_not_of(" \t")));
  }
  return out;
}

/// The candidate build's entry in a kforge.eval/1 document, or null.
json candidate_build(const json& summary) {
  if (summary.is_object() && summary.contains("builds") && summary["builds"].is_array())
    for (auto& b : summary["builds"])
      if (b.is_object() && b.value("role", "") == "candidate") return b;
  return json();
}

/// The best's median, reference median and speedups over each other timed subject, from
/// the summary's timing section, falling back to the timings table.
struct best_timing {
  std::optional<double> median_s, reference_median_s, roofline_fraction;
  json speedup_over = json::object();
};

best_timing timing_of(const json& summary, const std::optional<store::evaluation_record>& ev) {
  best_timing t;
  t.median_s = number_at(summary, {"timing", "candidate", "median_s"});
  t.reference_median_s = number_at(summary, {"timing", "reference", "median_s"});
  t.roofline_fraction = number_at(summary, {"timing", "roofline", "candidate_fraction"});
  if (summary.is_object() && summary.contains("timing") && summary["timing"].is_object() &&
      summary["timing"].contains("speedup_over") && summary["timing"]["speedup_over"].is_object())
    t.speedup_over = summary["timing"]["speedup_over"];
  if (ev) {
    std::map<std::string, double> medians; // the first timing of each subject, as the store's lists do
    for (auto& r : ev->timings) medians.emplace(r.subject, r.median_s);
    if (!t.median_s && medians.count("candidate")) t.median_s = medians["candidate"];
    if (!t.reference_median_s && medians.count("reference")) t.reference_median_s = medians["reference"];
    if (t.speedup_over.empty() && t.median_s && *t.median_s > 0)
      for (auto& [subject, m] : medians)
        if (subject != "candidate") t.speedup_over[subject] = m / *t.median_s;
  }
  return t;
}

} // namespace

std::optional<double> number_at(const json& j, std::initializer_list<const char*> path) {
  const json* p = &j;
  for (const char* k : path) {
    if (!p->is_object() || !p->contains(k)) return std::nullopt;
    p = &(*p)[k];
  }
  return p->is_number() ? std::optional<double>(p->get<double>()) : std::nullopt;
}

std::string file_stem(const std::string& problem) {
  std::string s = problem.empty() ? std::string("kernel") : problem;
  for (auto& c : s)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '_' || c == '-')) c = '_';
  if (s.front() == '.') s.front() = '_';
  return s;
}

std::optional<int64_t> parse_run_ref(const std::string& text) {
  std::string_view s = text;
  if (s.starts_with("run:")) s.remove_prefix(4);
  else if (s.starts_with("run")) s.remove_prefix(3);
  else if (s.starts_with("r")) s.remove_prefix(1);
  if (s.empty()) return std::nullopt;
  int64_t v = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || end != s.data() + s.size() || v <= 0) return std::nullopt;
  return v;
}

// ------------------------------------------------------------------------------ one run

json run_json(const store::store& db, int64_t run_id) {
  auto run = db.get_run(run_id);
  if (!run) KFORGE_THROW(usage, "no run {}", run_id);
  json j;
  j["schema"] = "kforge.run/1";
  j["run"] = {{"id", run->id},
              {"problem", run->problem},
              {"problem_path", run->problem_path},
              {"strategy", run->strategy},
              {"status", run->status},
              {"stop_reason", run->stop_reason},
              {"started_at", run->started_at},
              {"finished_at", text_or_null(run->finished_at)},
              {"resumes", run->resumes},
              {"config", parse_stored(run->config_json)}};

  const auto evs = db.run_evaluations(run_id);
  // The best passed speedup (and median) each candidate reached in this run.
  std::map<int64_t, double> cand_speedup;
  j["evaluations"] = json::array();
  for (auto& r : evs) {
    auto sp = speedup(r.candidate_median_s, r.reference_median_s);
    if (r.status == "passed" && sp) {
      auto [it, fresh] = cand_speedup.emplace(r.candidate_id, *sp);
      if (!fresh) it->second = std::max(it->second, *sp);
    }
    j["evaluations"].push_back({{"id", r.evaluation_id},
                                {"candidate_id", r.candidate_id},
                                {"parent_id", opt(r.parent_id)},
                                {"label", r.candidate_label},
                                {"origin", r.candidate_origin},
                                {"round", r.round},
                                {"step", r.step},
                                {"idea_id", opt(r.idea_id)},
                                {"params", parse_stored(r.params_json)},
                                {"reused", r.reused},
                                {"status", r.status},
                                {"message", r.message},
                                {"median_s", opt(r.candidate_median_s)},
                                {"reference_median_s", opt(r.reference_median_s)},
                                {"speedup", opt(sp)},
                                {"device_index", r.device_index}});
  }

  // The best and its lineage.
  j["best"] = nullptr;
  j["lineage"] = json::array();
  if (run->best_candidate_id) {
    const auto cand = db.get_candidate(*run->best_candidate_id);
    std::optional<store::evaluation_record> ev;
    if (run->best_evaluation_id) ev = db.get_evaluation(*run->best_evaluation_id);
    const json summary = ev ? parse_stored(ev->summary_json) : json::object();
    const auto t = timing_of(summary, ev);
    json b{{"candidate_id", *run->best_candidate_id},
           {"evaluation_id", opt(run->best_evaluation_id)},
           {"label", cand ? cand->label : ""},
           {"origin", cand ? cand->origin : ""},
           {"median_s", opt(t.median_s)},
           {"reference_median_s", opt(t.reference_median_s)},
           {"speedup", opt(speedup(t.median_s, t.reference_median_s))},
           {"roofline_fraction", opt(t.roofline_fraction)},
           {"speedup_over", t.speedup_over},
           {"device", str(summary, "device")},
           {"round", nullptr},
           {"step", nullptr}};
    for (auto& r : evs)
      if (run->best_evaluation_id && r.evaluation_id == *run->best_evaluation_id) {
        b["round"] = r.round;
        b["step"] = r.step;
        break;
      }
    j["best"] = b;

    std::set<int64_t> seen;
    for (std::optional<int64_t> id = run->best_candidate_id; id && seen.insert(*id).second;) {
      auto c = *id == *run->best_candidate_id ? cand : db.get_candidate(*id);
      if (!c) break;
      auto it = cand_speedup.find(c->id);
      j["lineage"].push_back({{"candidate_id", c->id},
                              {"label", c->label},
                              {"origin", c->origin},
                              {"speedup", it == cand_speedup.end() ? json() : json(it->second)}});
      id = c->parent_id;
    }
  }

  // Ideas: what became of each.
  const auto props = db.proposals_of(run_id);
  j["ideas"] = json::array();
  for (auto& idea : db.ideas_of(run_id)) {
    std::optional<double> best_sp;
    bool passed = false;
    int tried = 0;
    std::string first_failure;
    for (auto& r : evs) {
      if (r.idea_id != idea.id) continue;
      ++tried;
      if (r.status == "passed") {
        passed = true;
        if (auto sp = speedup(r.candidate_median_s, r.reference_median_s); sp && (!best_sp || *sp > *best_sp))
          best_sp = sp;
      } else if (first_failure.empty()) {
        first_failure = r.status;
      }
    }
    std::string outcome = passed ? "passed" : !first_failure.empty() ? first_failure : "not tried";
    if (!tried) // no candidate came of it: say why when a proposal for it failed
      for (auto& p : props)
        if (p.idea_id == idea.id && p.status != "ok") {
          outcome = p.status;
          break;
        }
    j["ideas"].push_back({{"id", idea.id},
                          {"round", idea.round},
                          {"title", idea.title},
                          {"body", idea.body},
                          {"outcome", outcome},
                          {"speedup", opt(best_sp)},
                          {"evaluations", tried}});
  }

  // Proposals: how the LLM's answers fared.
  json counts = json::object();
  json errors = json::array();
  for (auto& p : props) {
    counts[p.status] = counts.value(p.status, 0) + 1;
    if (p.status != "ok")
      errors.push_back({{"id", p.id},
                        {"round", p.round},
                        {"step", p.step},
                        {"status", p.status},
                        {"idea_id", opt(p.idea_id)},
                        {"error", p.error}});
  }
  j["proposals"] = {{"total", props.size()}, {"counts", counts}, {"errors", errors}};

  const auto t = db.llm_totals_of(run_id);
  j["llm"] = {{"calls", t.calls},
              {"failed_calls", t.failed_calls},
              {"input_tokens", t.input_tokens},
              {"output_tokens", t.output_tokens},
              {"cached_input_tokens", t.cached_input_tokens},
              {"cost_usd", t.cost_usd},
              {"unpriced_calls", t.unpriced_calls}};
  return j;
}

namespace {

std::string tokens(int64_t n) {
  if (n >= 1'000'000) return fmt::format("{:.2f}M", n / 1e6);
  if (n >= 10'000) return fmt::format("{:.1f}k", n / 1e3);
  return std::to_string(n);
}

std::string llm_line(const json& llm) {
  if (!llm.is_object() || llm.value("calls", 0) == 0) return "no LLM calls";
  std::string s = fmt::format("{} LLM call{}", llm.value("calls", 0), llm.value("calls", 0) == 1 ? "" : "s");
  if (llm.value("failed_calls", 0) > 0) s += fmt::format(" ({} failed)", llm.value("failed_calls", 0));
  s += fmt::format(", {} in / {} out tokens", tokens(llm.value("input_tokens", int64_t{0})),
                   tokens(llm.value("output_tokens", int64_t{0})));
  if (llm.value("cached_input_tokens", int64_t{0}) > 0)
    s += fmt::format(" ({} cached)", tokens(llm.value("cached_input_tokens", int64_t{0})));
  s += fmt::format(", ${:.2f}", llm.value("cost_usd", 0.0));
  if (llm.value("unpriced_calls", 0) > 0) s += fmt::format(" (+{} unpriced)", llm.value("unpriced_calls", 0));
  return s;
}

} // namespace

std::string run_text(const json& j) {
  const json& run = j["run"];
  std::string s = fmt::format("run {}  {}  strategy {}  {}", run.value("id", int64_t{0}), str(run, "problem"),
                              str(run, "strategy"), str(run, "status"));
  if (!str(run, "stop_reason").empty()) s += ": " + str(run, "stop_reason");
  s += "\n";
  s += fmt::format("  started {}", str(run, "started_at"));
  if (!str(run, "finished_at").empty()) s += fmt::format(", finished {}", str(run, "finished_at"));
  if (run.value("resumes", 0) > 0)
    s += fmt::format(", resumed {} time{}", run.value("resumes", 0), run.value("resumes", 0) == 1 ? "" : "s");
  s += "\n";
  int passed = 0, reused = 0;
  for (auto& e : j["evaluations"]) {
    passed += e.value("status", "") == "passed";
    reused += e.value("reused", false);
  }
  s += fmt::format("  {} evaluation{} ({} passed{}); {}\n", j["evaluations"].size(),
                   j["evaluations"].size() == 1 ? "" : "s", passed,
                   reused ? fmt::format(", {} reused", reused) : std::string(), llm_line(j["llm"]));
  const json& props = j["proposals"];
  if (props.is_object() && props.value("total", 0) > 0) {
    std::string c;
    for (auto& [k, v] : props["counts"].items()) c += fmt::format("{}{} {}", c.empty() ? "" : ", ", v.get<int>(), k);
    s += fmt::format("  proposals {}\n", c);
  }

  const json& best = j["best"];
  if (best.is_object()) {
    s += fmt::format("\nbest  candidate #{} {} ({})", best.value("candidate_id", int64_t{0}), str(best, "label"),
                     str(best, "origin"));
    if (best["evaluation_id"].is_number())
      s += fmt::format(", evaluation #{}", best["evaluation_id"].get<int64_t>());
    if (best["round"].is_number()) s += fmt::format(", round {} {}", best["round"].get<int>(), str(best, "step"));
    s += "\n";
    std::string line = fmt::format("  time {}", seconds_of(best["median_s"]));
    if (best["speedup"].is_number()) line += fmt::format(", {} vs reference", ratio_of(best["speedup"]));
    if (best["reference_median_s"].is_number()) line += fmt::format(" ({})", seconds_of(best["reference_median_s"]));
    if (best["speedup_over"].is_object())
      for (auto& [k, v] : best["speedup_over"].items())
        if (k != "reference") line += fmt::format(", {} vs {}", ratio_of(v), k);
    if (best["roofline_fraction"].is_number())
      line += fmt::format(", {:.0f}% of the roofline", 100 * best["roofline_fraction"].get<double>());
    s += line + "\n";
    if (!str(best, "device").empty()) s += fmt::format("  on {}\n", str(best, "device"));
  } else {
    s += "\nbest  none: no candidate passed\n";
  }

  if (j["lineage"].size() > 1) {
    s += "\nlineage (root first)\n";
    const auto& lin = j["lineage"];
    for (std::size_t i = 0; i < lin.size(); ++i) {
      const json& c = lin[lin.size() - 1 - i];
      s += fmt::format("  {}#{} {} ({}){}{}\n", std::string(2 * i, ' '), c.value("candidate_id", int64_t{0}),
                       str(c, "label"), str(c, "origin"),
                       c["speedup"].is_number() ? "  " + ratio_of(c["speedup"]) : std::string(),
                       i + 1 == lin.size() ? "  <- best" : "");
    }
  }

  if (!j["ideas"].empty()) {
    s += "\nideas\n";
    for (auto& idea : j["ideas"]) {
      std::string outcome = str(idea, "outcome");
      if (idea["speedup"].is_number()) outcome = ratio_of(idea["speedup"]);
      s += fmt::format("  r{:<3} {:<13} {}\n", idea.value("round", 0), truncate(outcome, 13),
                       truncate(str(idea, "title"), 80));
    }
  }
  if (props.is_object() && !props["errors"].empty()) {
    s += "\nfailed proposals\n";
    for (auto& e : props["errors"])
      s += fmt::format("  r{:<3} {:<10} {:<10} {}\n", e.value("round", 0), truncate(str(e, "step"), 10),
                       str(e, "status"), truncate(str(e, "error"), 90));
  }

  if (!j["evaluations"].empty()) {
    const json best_eval = best.is_object() ? best["evaluation_id"] : json();
    s += fmt::format("\n{:>6} {:>5}  {:<10} {:<32} {:<15} {:>10} {:>8}\n", "eval", "round", "step", "candidate",
                     "status", "time", "speedup");
    for (auto& e : j["evaluations"]) {
      const bool is_best = best_eval.is_number() && e["id"] == best_eval;
      s += fmt::format("{:>6} {:>5}  {:<10} {:<32} {:<15} {:>10} {:>8}{}{}\n", e.value("id", int64_t{0}),
                       e.value("round", 0), truncate(str(e, "step"), 10), truncate(str(e, "label"), 32),
                       truncate(str(e, "status"), 15), seconds_of(e["median_s"]), ratio_of(e["speedup"]),
                       e.value("reused", false) ? " (reused)" : "", is_best ? "  *best" : "");
    }
  }
  return s;
}

// ------------------------------------------------------------------------------ runs

json runs_json(const std::vector<store::run_record>& runs, const store::store* db) {
  json j{{"schema", "kforge.show-runs/1"}, {"runs", json::array()}};
  for (auto& r : runs) {
    json e{{"id", r.id},
           {"problem", r.problem},
           {"strategy", r.strategy},
           {"status", r.status},
           {"stop_reason", r.stop_reason},
           {"started_at", r.started_at},
           {"finished_at", text_or_null(r.finished_at)},
           {"resumes", r.resumes},
           {"best_candidate_id", opt(r.best_candidate_id)},
           {"best_evaluation_id", opt(r.best_evaluation_id)}};
    if (db) {
      e["evaluations"] = db->run_evaluations(r.id).size();
      std::optional<store::evaluation_record> ev;
      if (r.best_evaluation_id) ev = db->get_evaluation(*r.best_evaluation_id);
      const auto t = ev ? timing_of(parse_stored(ev->summary_json), ev) : best_timing{};
      e["best_median_s"] = opt(t.median_s);
      e["best_speedup"] = opt(speedup(t.median_s, t.reference_median_s));
    }
    j["runs"].push_back(e);
  }
  return j;
}

std::string runs_text(const std::vector<store::run_record>& runs, const store::store* db) {
  if (runs.empty()) return "no runs recorded (kforge optimize starts one)\n";
  const json j = runs_json(runs, db);
  std::string s = fmt::format("{:>5}  {:<16} {:<8} {:<9} {:>5} {:>10} {:>8}  {:<24} {}\n", "run", "problem",
                              "strategy", "status", "evals", "best", "speedup", "started", "stop reason");
  for (auto& r : j["runs"]) {
    auto line = fmt::format("{:>5}  {:<16} {:<8} {:<9} {:>5} {:>10} {:>8}  {:<24} {}", r.value("id", int64_t{0}),
                            truncate(str(r, "problem"), 16), truncate(str(r, "strategy"), 8),
                            truncate(str(r, "status"), 9),
                            r.contains("evaluations") ? std::to_string(r["evaluations"].get<std::size_t>()) : "-",
                            seconds_of(r.value("best_median_s", json())), ratio_of(r.value("best_speedup", json())),
                            str(r, "started_at"), str(r, "stop_reason"));
    while (!line.empty() && line.back() == ' ') line.pop_back();
    s += line + "\n";
  }
  return s;
}

// ------------------------------------------------------------------------------ export

namespace {

std::filesystem::path abi_header(const std::string& name) {
  auto p = build::abi_include_dir() / "kforge" / name;
  if (!std::filesystem::exists(p))
    KFORGE_THROW(internal, "{}: kforge's ABI header is missing (set KFORGE_INCLUDE to the folder holding kforge/)",
                 p.string());
  return p;
}

/// `-DKF_REAL=T` from a recorded build command, or empty.
std::string kf_real_of(const std::string& command) {
  const std::string key = "-DKF_REAL=";
  auto at = command.find(key);
  if (at == std::string::npos) return "";
  auto end = command.find_first_of(" \t'\"", at + key.size());
  return command.substr(at + key.size(), end == std::string::npos ? std::string::npos : end - at - key.size());
}

std::string readme(const store::run_record& run, const store::candidate_record& cand, const json& summary,
                   const std::optional<store::evaluation_record>& ev, const json& params, const std::string& name,
                   bool cuda, const std::vector<std::string>& launches, bool python) {
  const std::string file = name + (python ? ".py" : cuda ? ".cu" : ".cpp");
  const auto t = timing_of(summary, ev);
  const json build = candidate_build(summary);
  const std::string recorded = str(build, "command");
  const std::string real = kf_real_of(recorded);
  const std::string real_flag = real.empty() || real == "float" ? "" : " -DKF_REAL=" + real;

  std::string s = fmt::format("# {}: the best kernel of kforge run {}\n\n", run.problem, run.id);
  s += fmt::format("`{}` is candidate #{} ({}, origin `{}`) of problem `{}`", file, cand.id, cand.label, cand.origin,
                   run.problem);
  if (!run.problem_path.empty()) s += fmt::format(" (`{}`)", run.problem_path);
  s += fmt::format(", the best that kforge's `{}` search found in run {}", run.strategy, run.id);
  if (ev) s += fmt::format(" (evaluation #{})", ev->id);
  s += ".";
  if (!run.stop_reason.empty()) s += fmt::format(" The run {} ({}).", run.status, run.stop_reason);
  s += "\n\n";
  if (params.is_object() && !params.empty()) s += fmt::format("Tuned parameters: `{}`.\n\n", params.dump());

  s += "## Measured\n\n";
  s += "It passed every verification check kforge runs (the full record is `" + name + ".json`, a `kforge.eval/1` document).\n\n";
  s += "| | |\n|---|---|\n";
  if (!str(summary, "device").empty()) s += fmt::format("| device | {} |\n", str(summary, "device"));
  if (!str(summary, "precision").empty()) s += fmt::format("| precision | {} |\n", str(summary, "precision"));
  s += fmt::format("| median time | {} |\n", t.median_s ? seconds(*t.median_s) : "-");
  if (t.reference_median_s) s += fmt::format("| reference median | {} |\n", seconds(*t.reference_median_s));
  if (auto sp = speedup(t.median_s, t.reference_median_s)) s += fmt::format("| speedup over the reference | {:.2f}x |\n", *sp);
  for (auto& [k, v] : t.speedup_over.items())
    if (k != "reference" && v.is_number()) s += fmt::format("| speedup over {} | {:.2f}x |\n", k, v.get<double>());
  if (t.roofline_fraction) s += fmt::format("| fraction of the roofline floor | {:.0f}% |\n", 100 * *t.roofline_fraction);
  s += "\n";

  s += "## Build\n\n";
  if (python) {
    s += "This is a Python candidate in KernelBench's solution format: the file defines `class ModelNew` "
         "(torch.nn.Module). Construct it as the problem's `Model` is (with `get_init_inputs()` for a KernelBench "
         "problem), move it to the GPU, and call it with the problem's inputs; it returns the output tensor (or a "
         "tuple of them):\n\n";
    s += fmt::format("```python\nfrom {} import ModelNew\nmodel = ModelNew(*init_inputs).cuda()\ny = model(*inputs)\n```\n\n",
                     name);
    s += "Its first call compiles its kernels (Triton's JIT, `load_inline`), which kforge counted as the build and "
         "did not time; kforge called it on `torch.cuda.current_stream()` and copied what it returned into its own "
         "output buffers inside each timed call, so the measured time includes that copy.\n\n";
    if (!recorded.empty()) s += fmt::format("kforge's own build step, for the record:\n\n```\n{}\n```\n", recorded);
    return s;
  }
  s += "`kforge/kernel.h` (the candidate ABI: `kf_tensor`, `kf_args`, `KF_REAL`) is beside it, so it compiles with "
       "`-I.` from this folder.\n\n";
  if (cuda && !launches.empty()) {
    s += "This is a *kernel-only* candidate: device code with no `kf_forward` and no host code. kforge compiled it "
         "with NVRTC and launched its kernels itself, in the order of its `// kforge: launch` lines, on the call's "
         "stream:\n\n```\n";
    for (auto& l : launches) s += l + "\n";
    s += "```\n\n";
    s += "Each line gives a kernel (with its template arguments), its grid and block (and optionally the dynamic "
         "shared memory in bytes) as expressions of the tensors' shapes (`x.shape[0]`, `cdiv(a, b)`, ...), and its "
         "arguments: tensors by their name in the problem (device pointers), `workspace`, or 64-bit integers. To use "
         "it elsewhere, launch the kernels the same way from your own host code. To compile it to a cubin:\n\n";
    s += fmt::format("```sh\nnvcc -O3 -std=c++17 -arch=sm_90a -cubin -I. -include kforge/nvrtc_prelude.h{} {} -o {}.cubin\n```\n\n",
                     real_flag, file, name);
    s += "NVRTC compiled it with `-default-device` (a function without `__host__`/`__device__` is a device "
         "function), which nvcc lacks: mark such helpers `__device__` first if nvcc rejects them.\n\n";
  } else if (cuda) {
    s += "It exports `kf_forward(const kf_args*)`, which enqueues its work on `args->stream` and returns 0. Build it "
         "as a shared object:\n\n";
    s += fmt::format("```sh\nnvcc -O3 -std=c++17 -arch=sm_90a -Xcompiler -fPIC -shared -I.{} {} -o {}.so\n```\n\n",
                     real_flag, file, name);
    s += "(add `-lcublas -lcublasLt` if it includes cuBLAS; kforge also pre-included `cuda_fp16.h` and "
         "`cuda_bf16.h`: add `-include cuda_fp16.h -include cuda_bf16.h` if it uses `half` or `__nv_bfloat16` "
         "without including them).\n\n";
  } else {
    s += "It exports `kf_forward(const kf_args*)` for the CPU backend (`args->stream` is NULL) and returns 0. "
         "Build it as a shared object:\n\n";
    s += fmt::format("```sh\nc++ -O3 -std=c++17 -fPIC -shared -fopenmp -I.{} {} -o {}.so\n```\n\n", real_flag, file,
                     name);
    s += "(kforge also used `-march=native`, so the measured time is for the machine it ran on.)\n\n";
  }
  if (!real_flag.empty())
    s += fmt::format("`KF_REAL` is `{}` for this problem (`kernel.h` defaults it to `float`).\n\n", real);
  if (!recorded.empty()) s += fmt::format("kforge's own build command, for the record:\n\n```\n{}\n```\n", recorded);
  return s;
}

} // namespace

export_result export_best(const store::store& db, int64_t run_id, const std::filesystem::path& dir) {
  auto run = db.get_run(run_id);
  if (!run) KFORGE_THROW(usage, "no run {}", run_id);
  if (!run->best_candidate_id) KFORGE_THROW(usage, "no candidate of run {} passed; nothing to export", run_id);
  auto cand = db.get_candidate(*run->best_candidate_id);
  if (!cand) KFORGE_THROW(store, "run {}: its best candidate #{} is missing from the database", run_id, *run->best_candidate_id);
  std::optional<store::evaluation_record> ev;
  if (run->best_evaluation_id) ev = db.get_evaluation(*run->best_evaluation_id);
  json summary = ev ? parse_stored(ev->summary_json) : json::object();
  if (!summary.is_object()) summary = json::object();

  export_result r;
  r.run_id = run_id;
  r.candidate_id = cand->id;
  r.evaluation_id = ev ? ev->id : 0;
  r.dir = dir;
  // CPU or CUDA: the device that measured it, else the toolchain that built it, else the source.
  const std::string device = str(summary, "device");
  const std::string toolchain = str(candidate_build(summary), "toolchain");
  const auto launches = launch_directives(cand->source);
  if (device.starts_with("cpu")) r.cuda = false;
  else if (device.starts_with("cuda")) r.cuda = true;
  else if (!toolchain.empty()) r.cuda = toolchain != "host";
  else r.cuda = !launches.empty() || cand->source.find("__global__") != std::string::npos;
  r.kernel_only = r.cuda && !launches.empty();
  r.python = toolchain == "python" || (toolchain.empty() && build::is_python_source(cand->source));
  if (r.python) r.kernel_only = false;

  json params = json::object();
  for (auto& re : db.run_evaluations(run_id))
    if (re.evaluation_id == r.evaluation_id) {
      params = parse_stored(re.params_json);
      break;
    }

  const std::string name = file_stem(run->problem) + "_best";
  std::filesystem::create_directories(dir);
  if (!r.python) std::filesystem::create_directories(dir / "kforge");
  auto put = [&](const std::filesystem::path& p, const std::string& text) {
    write_file_atomic(p, text);
    r.files.push_back(p);
  };
  put(dir / (name + (r.python ? ".py" : r.cuda ? ".cu" : ".cpp")), cand->source);
  if (!r.python) put(dir / "kforge" / "kernel.h", read_file(abi_header("kernel.h")));
  if (r.kernel_only) put(dir / "kforge" / "nvrtc_prelude.h", read_file(abi_header("nvrtc_prelude.h")));
  put(dir / "README.md", readme(*run, *cand, summary, ev, params, name, r.cuda,
                                r.kernel_only ? launches : std::vector<std::string>{}, r.python));
  json doc = summary;
  if (doc.empty() && ev)
    doc = {{"schema", "kforge.eval/1"}, {"evaluation_id", ev->id}, {"status", ev->status}, {"message", ev->message}};
  put(dir / (name + ".json"), doc.dump(2) + "\n");
  return r;
}

} // namespace kforge::report
