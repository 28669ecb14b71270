#include "report/suite.hpp"

#include "core/error.hpp"

#include <fmt/format.h>

#include <algorithm>

namespace kforge::report {

using nlohmann::json;

namespace {

std::optional<double> median_of(const json& eval, const char* subject) {
  if (!eval.is_object() || !eval.contains("timing") || !eval["timing"].is_object()) return std::nullopt;
  const auto& t = eval["timing"];
  if (!t.contains(subject) || !t[subject].is_object()) return std::nullopt;
  const auto& m = t[subject].value("median_s", json());
  return m.is_number() ? std::optional<double>(m.get<double>()) : std::nullopt;
}

std::optional<double> ratio(const suite_row& r, const std::optional<double>& baseline) {
  if (!r.passed() || !r.candidate_s || !baseline || !(*r.candidate_s > 0) || !(*baseline > 0)) return std::nullopt;
  return *baseline / *r.candidate_s;
}

template <class T> json opt(const std::optional<T>& v) { return v ? json(*v) : json(); }

std::string level_key(double p) { return fmt::format("{:g}", p); }

// Milliseconds, three decimals from 1 ms up, four significant digits below.
std::string ms(const std::optional<double>& s) {
  if (!s) return "-";
  const double v = *s * 1e3;
  return v >= 1 ? fmt::format("{:.3f}", v) : fmt::format("{:.4g}", v);
}

std::string times(const std::optional<double>& x) { return x ? fmt::format("{:.2f}x", *x) : std::string("-"); }

std::string truncate(const std::string& s, std::size_t n) {
  if (s.size() <= n) return s;
  return s.substr(0, n - 1) + "~";
}

std::string one_line(std::string s) {
  std::replace(s.begin(), s.end(), '\n', ' ');
  return s;
}

} // namespace

suite_row row_of_evaluation(std::string problem, const json& eval) {
  suite_row r;
  r.problem = std::move(problem);
  r.status = "error";
  if (!eval.is_object()) {
    r.message = "the evaluation left no kforge.eval/1 document";
    return r;
  }
  if (auto st = eval.value("status", json()); st.is_string()) r.status = st.get<std::string>();
  if (auto m = eval.value("message", json()); m.is_string()) r.message = m.get<std::string>();
  if (auto id = eval.value("evaluation_id", json()); id.is_number_integer()) r.evaluation_id = id.get<long long>();
  if (auto c = eval.value("candidate", json()); c.is_object() && c.value("path", json()).is_string())
    r.candidate = c["path"].get<std::string>();
  r.candidate_s = median_of(eval, "candidate");
  r.reference_s = median_of(eval, "reference");
  r.compile_s = median_of(eval, "torch_compile");
  return r;
}

std::optional<double> speedup_over_reference(const suite_row& r) { return ratio(r, r.reference_s); }
std::optional<double> speedup_over_compile(const suite_row& r) { return ratio(r, r.compile_s); }

std::optional<double> speedup_over(const suite_row& r, std::string_view baseline) {
  if (baseline == "reference") return speedup_over_reference(r);
  if (baseline == "compile") return speedup_over_compile(r);
  KFORGE_THROW(internal, "unknown suite baseline '{}' (reference or compile)", baseline);
}

bool counts_against(const suite_row& r, std::string_view baseline) {
  if (baseline == "reference") return true;
  if (baseline == "compile") return r.compile_s.has_value() || (r.compile && !r.passed());
  KFORGE_THROW(internal, "unknown suite baseline '{}' (reference or compile)", baseline);
}

fast_p_score fast_p(const std::vector<suite_row>& rows, double p, std::string_view baseline) {
  fast_p_score f;
  for (auto& r : rows) {
    if (!counts_against(r, baseline)) continue;
    ++f.denominator;
    if (!r.passed()) continue;
    if (p <= 0) {
      ++f.numerator; // fast_0: correctness alone
    } else if (auto s = speedup_over(r, baseline); s && *s > p) {
      ++f.numerator;
    }
  }
  if (f.denominator > 0) f.value = static_cast<double>(f.numerator) / f.denominator;
  return f;
}

json suite_json(const std::vector<suite_row>& rows) {
  json out{{"schema", "kforge.suite/1"}};
  int passed = 0, skipped = 0, errored = 0;
  json jr = json::array();
  for (auto& r : rows) {
    passed += r.passed();
    skipped += r.status == "skipped";
    errored += r.status == "error";
    jr.push_back({{"problem", r.problem},
                  {"status", r.status},
                  {"passed", r.passed()},
                  {"message", r.message},
                  {"candidate", r.candidate.empty() ? json() : json(r.candidate)},
                  {"evaluation_id", opt(r.evaluation_id)},
                  {"run_id", opt(r.run_id)},
                  {"torch", r.torch},
                  {"compile", r.compile},
                  {"candidate_s", opt(r.candidate_s)},
                  {"reference_s", opt(r.reference_s)},
                  {"compile_s", opt(r.compile_s)},
                  {"speedup_over",
                   {{"reference", opt(speedup_over_reference(r))}, {"compile", opt(speedup_over_compile(r))}}}});
  }
  const int n = static_cast<int>(rows.size());
  out["summary"] = {{"problems", n},
                    {"passed", passed},
                    {"failed", n - passed - skipped - errored},
                    {"skipped", skipped},
                    {"error", errored}};
  out["rows"] = std::move(jr);
  json fp = json::object();
  for (const char* baseline : {"reference", "compile"}) {
    json b = json::object(), counts = json::object();
    for (double p : fast_p_levels) {
      const auto f = fast_p(rows, p, baseline);
      b["n"] = f.denominator;
      b[level_key(p)] = opt(f.value);
      counts[level_key(p)] = f.numerator;
    }
    b["counts"] = counts;
    fp[baseline] = b;
  }
  out["fast_p"] = fp;
  return out;
}

std::string suite_table(const std::vector<suite_row>& rows) {
  if (rows.empty()) return "no problems\n";
  // A [torch] problem's reference column is eager PyTorch: its name carries a '*'.
  const bool any_torch = std::any_of(rows.begin(), rows.end(), [](auto& r) { return r.torch; });
  auto name = [](const suite_row& r) { return truncate(r.problem, 39) + (r.torch ? "*" : ""); };
  std::size_t wp = 7, ws = 6;
  for (auto& r : rows) {
    wp = std::max(wp, name(r).size());
    ws = std::max(ws, std::min<std::size_t>(r.status.size(), 16));
  }
  std::string s = fmt::format("{:<{}}  {:<{}}  {:>12}  {:>12}  {:>10}  {:>12}  {:>10}  {}\n", "problem", wp, "status",
                              ws, "candidate ms", "reference ms", "compile ms", "vs reference", "vs compile",
                              "evaluation");
  for (auto& r : rows) {
    auto line = fmt::format("{:<{}}  {:<{}}  {:>12}  {:>12}  {:>10}  {:>12}  {:>10}  {}", name(r), wp,
                            truncate(r.status, 16), ws, ms(r.candidate_s), ms(r.reference_s), ms(r.compile_s),
                            times(speedup_over_reference(r)), times(speedup_over_compile(r)),
                            r.evaluation_id ? fmt::format("#{}", *r.evaluation_id) : std::string());
    while (!line.empty() && line.back() == ' ') line.pop_back();
    s += line + "\n";
  }
  if (any_torch) s += "* a [torch] problem: its reference is eager PyTorch\n";
  s += "\n";
  for (const char* baseline : {"reference", "compile"}) {
    const auto n = fast_p(rows, 0, baseline).denominator;
    std::string line = fmt::format("fast_p vs {:<9}  n={:<3}", baseline, n);
    if (n == 0) {
      line += std::string(" ") + (std::string_view(baseline) == "compile" ? "no problem has a torch.compile time"
                                                                          : "no problems");
    } else {
      for (double p : fast_p_levels) {
        const auto f = fast_p(rows, p, baseline);
        line += fmt::format("  p={:<3} {:.2f} ({})", level_key(p), *f.value, f.numerator);
      }
    }
    s += line + "\n";
  }
  bool header = false;
  for (auto& r : rows) {
    if (r.passed()) continue;
    if (!header) s += "\n";
    header = true;
    s += fmt::format("{}: {}: {}\n", r.problem, r.status, truncate(one_line(r.message), 160));
  }
  return s;
}

} // namespace kforge::report
