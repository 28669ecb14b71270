#include "propose/prompt.hpp"

#include "core/dtype.hpp"
#include "core/error.hpp"
#include "core/fs.hpp"

#include <cxxabi.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <memory>

namespace kforge::propose {
namespace {

using nlohmann::json;

// ---- number and text formatting -------------------------------------------------------

/// 3 significant digits with an SI prefix: si(4194304, "B") == "4.19 MB".
std::string si(double v, std::string_view unit) {
  static const char* prefix[] = {"", "k", "M", "G", "T", "P", "E"};
  int i = 0;
  while (std::fabs(v) >= 999.5 && i < 6) {
    v /= 1000;
    ++i;
  }
  return fmt::format("{:.3g} {}{}", v, prefix[i], unit);
}

/// seconds -> "412 us", "1.23 ms", "2.5 s".
std::string duration(double s) {
  if (!(s > 0)) return fmt::format("{:.3g} s", s);
  if (s < 1e-3) return fmt::format("{:.3g} us", s * 1e6);
  if (s < 1) return fmt::format("{:.3g} ms", s * 1e3);
  return fmt::format("{:.3g} s", s);
}

std::string ratio(double x) { return fmt::format("{:.2f}x", x); }
std::string percent(double x) { return fmt::format("{:.0f}%", x * 100); }

/// A number as a fact in a prompt: integers as such, others with 4 significant digits.
std::string number(const json& v) {
  if (v.is_number_float()) return fmt::format("{:.4g}", v.get<double>());
  return template_text(v);
}

/// The fence that can hold `text`: three backticks, or more than its longest run.
std::string fence_for(std::string_view text) {
  std::size_t longest = 0, run = 0;
  for (char c : text) {
    run = c == '`' ? run + 1 : 0;
    longest = std::max(longest, run);
  }
  return std::string(std::max<std::size_t>(3, longest + 1), '`');
}

std::string shape_text(const std::vector<int64_t>& shape) {
  std::string s = "[";
  for (std::size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

std::string one_line(std::string s, std::size_t max_chars) {
  std::replace(s.begin(), s.end(), '\n', ' ');
  if (s.size() > max_chars) s = s.substr(0, max_chars) + " ...";
  return s;
}

std::string trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return std::string(s);
}

/// `s` without trailing whitespace: a source's final newline would leave a blank line in its fence.
std::string trim_end(std::string s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.pop_back();
  return s;
}

std::vector<std::string> lines_of(std::string_view text) {
  std::vector<std::string> out;
  std::size_t start = 0;
  while (start < text.size()) {
    auto nl = text.find('\n', start);
    if (nl == std::string_view::npos) nl = text.size();
    out.emplace_back(text.substr(start, nl - start));
    start = nl + 1;
  }
  return out;
}

/// The first `max_lines` lines of `text` (each cut at 400 characters) and how many were left out.
json truncated_block(const std::string& text, int max_lines) {
  auto lines = lines_of(text);
  while (!lines.empty() && trim(lines.back()).empty()) lines.pop_back();
  const std::size_t keep = std::min<std::size_t>(lines.size(), static_cast<std::size_t>(std::max(max_lines, 0)));
  std::string shown;
  for (std::size_t i = 0; i < keep; ++i) {
    std::string l = lines[i];
    if (!l.empty() && l.back() == '\r') l.pop_back();
    if (l.size() > 400) l = l.substr(0, 400) + " ...";
    shown += l + "\n";
  }
  if (!shown.empty()) shown.pop_back(); // the template ends the line
  json j{{"text", shown}, {"fence", fence_for(shown)}, {"total_lines", lines.size()}};
  if (lines.size() > keep) j["more_lines"] = lines.size() - keep;
  return j;
}

std::string demangle(const std::string& name) {
  int status = 0;
  std::unique_ptr<char, void (*)(void*)> d(abi::__cxa_demangle(name.c_str(), nullptr, nullptr, &status), std::free);
  std::string s = status == 0 && d ? std::string(d.get()) : name;
  return s.size() > 160 ? s.substr(0, 160) + "..." : s;
}

std::string lang_of(const problem::problem& p) { return p.backend == problem::backend_kind::cuda ? "cuda" : "cpp"; }

std::string role_name(problem::tensor_role r) {
  switch (r) {
  case problem::tensor_role::input: return "input";
  case problem::tensor_role::param: return "param";
  case problem::tensor_role::output: return "output";
  }
  return "?";
}

std::string peak_name(kf_dtype t) {
  switch (t) {
  case KF_F64: return "fp64";
  case KF_F16:
  case KF_BF16: return "bf16";
  default: return "fp32";
  }
}

std::string tolerance_summary(const problem::problem& p) {
  const auto& t = p.tolerance;
  std::string s;
  if (t.policy == problem::tolerance_policy::ratio) {
    const std::string eps_of = t.precision == "nominal" ? std::string(dtype_name(p.dtype)) : t.precision;
    s = fmt::format("the candidate's error against the float64 oracle (max abs error and relative L2 error) may be "
                    "at most {}x the reference's own error at {}, plus a floor of {} ulps of {} times max|oracle|",
                    template_text(t.alpha), dtype_name(p.dtype), template_text(t.floor_ulps), eps_of);
    if (t.precision != "nominal")
      s += fmt::format("; the problem explicitly allows {} arithmetic (tensor cores at that precision)", t.precision);
    else
      s += "; lower-precision arithmetic (tf32, bf16, fp16 for an fp32 problem) fails it";
  } else {
    s = fmt::format("per element, |got - oracle| <= {} + {} * |oracle| against the float64 oracle",
                    template_text(t.atol), template_text(t.rtol));
  }
  return s;
}

// ---- kforge.eval/1 pieces ----------------------------------------------------------------

double num_or(const json& j, const char* key, double fallback) {
  auto it = j.find(key);
  return it != j.end() && it->is_number() ? it->get<double>() : fallback;
}

/// doc.timing as templates see it; null when the document has none.
json timing_context(const json& doc) {
  auto tit = doc.find("timing");
  if (tit == doc.end() || !tit->is_object()) return nullptr;
  const json& t = *tit;
  json j = json::object();
  auto median = [&](const std::string& subject) -> double {
    auto it = t.find(subject);
    return it != t.end() && it->is_object() ? num_or(*it, "median_s", 0) : 0;
  };
  const double cand = median("candidate"), ref = median("reference");
  if (cand > 0) {
    j["candidate"] = duration(cand);
    j["candidate_s"] = cand;
    const json& c = t["candidate"];
    j["samples"] = c.value("samples", 0);
    if (num_or(c, "ci_rel", -1) > 0) j["ci"] = fmt::format("±{:.1f}%", num_or(c, "ci_rel", 0) * 100);
  }
  if (ref > 0) j["reference"] = duration(ref);
  if (t.contains("speedup") && t["speedup"].is_number()) {
    j["speedup"] = ratio(t["speedup"].get<double>());
    j["speedup_value"] = t["speedup"].get<double>();
  }
  json baselines = json::array();
  for (auto it = t.begin(); it != t.end(); ++it) {
    if (it.key() == "candidate" || it.key() == "reference" || !it->is_object() || !it->contains("median_s")) continue;
    json b{{"name", it.key()}, {"median", duration(num_or(*it, "median_s", 0))}};
    if (t.contains("speedup_over") && t["speedup_over"].contains(it.key()))
      b["speedup"] = ratio(num_or(t["speedup_over"], it.key().c_str(), 0));
    else if (cand > 0)
      b["speedup"] = ratio(num_or(*it, "median_s", 0) / cand);
    baselines.push_back(b);
  }
  j["baselines"] = baselines;
  j["has_baselines"] = !baselines.empty();
  if (t.contains("roofline") && t["roofline"].is_object()) {
    const json& r = t["roofline"];
    json rj = json::object();
    if (num_or(r, "candidate_fraction", 0) > 0) rj["fraction"] = percent(num_or(r, "candidate_fraction", 0));
    if (num_or(r, "reference_fraction", 0) > 0) rj["reference_fraction"] = percent(num_or(r, "reference_fraction", 0));
    if (num_or(r, "floor_s", 0) > 0) rj["floor"] = duration(num_or(r, "floor_s", 0));
    rj["bound"] = r.value("bound", "");
    j["roofline"] = rj;
  }
  if (num_or(t, "candidate_gbytes_per_s", 0) > 0) j["gbytes_per_s"] = si(num_or(t, "candidate_gbytes_per_s", 0) * 1e9, "B/s");
  if (num_or(t, "candidate_gflops", 0) > 0) j["gflops"] = si(num_or(t, "candidate_gflops", 0) * 1e9, "FLOP/s");
  return j;
}

/// The one-line verdict candidate.md shows.
std::string summary_of(const json& doc, const json& timing) {
  if (!doc.value("passed", false)) return fmt::format("failed `{}`", doc.value("status", "?"));
  if (timing.is_null() || !timing.contains("candidate")) return "passed every check (not timed)";
  std::string s = fmt::format("passed every check; median {}", timing["candidate"].get<std::string>());
  if (timing.contains("reference"))
    s += fmt::format(" against the reference's {}", timing["reference"].get<std::string>());
  if (timing.contains("speedup")) s += fmt::format(" ({} speedup)", timing["speedup"].get<std::string>());
  for (auto& b : timing["baselines"])
    if (b.contains("speedup")) s += fmt::format(", {} over {}", b["speedup"].get<std::string>(), b["name"].get<std::string>());
  if (timing.contains("roofline") && timing["roofline"].contains("fraction"))
    s += fmt::format("; {} of the roofline floor ({}-bound)", timing["roofline"]["fraction"].get<std::string>(),
                     timing["roofline"].value("bound", "?"));
  return s;
}

json worst_context(const json& w) {
  json j = json::object();
  for (const char* k : {"element", "got", "expected", "reference"})
    if (w.contains(k)) j[k] = template_text(w[k]);
  if (w.contains("index")) j["index"] = w["index"];
  if (!j.contains("element") && w.contains("index")) j["element"] = "element " + template_text(w["index"]);
  return j;
}

json tolerance_context(const json& d) {
  json j = json::object();
  j["policy"] = d.value("policy", "ratio");
  for (const char* k : {"max_abs_error", "reference_max_abs_error", "bound_abs", "rel_l2_error",
                        "reference_rel_l2_error", "bound_rel_l2", "alpha", "rtol", "atol", "failing_elements"})
    if (d.contains(k) && d[k].is_number()) j[k] = number(d[k]);
  if (d.contains("error_ratio") && d["error_ratio"].is_number()) {
    const double r = d["error_ratio"].get<double>();
    j["error_ratio"] = r < 0 ? "the reference is exact here and the candidate is not"
                             : fmt::format("{:.3g}x the reference's error", r);
  }
  return j;
}

/// Scalar evidence of a check's detail as {key, value} rows, for checks without a
/// dedicated block. Nested "detail" (timed_output) is flattened after the outer keys.
void collect_facts(const json& d, json& facts, bool element_shown) {
  for (auto it = d.begin(); it != d.end(); ++it) {
    const std::string& k = it.key();
    if (k == "worst" || k == "diagnostics" || k == "output" || k == "report") continue;
    if (element_shown && (k == "index" || k == "element" || k == "got" || k == "expected" || k == "reference")) continue;
    if (k == "detail" && it->is_object()) continue;
    std::string v = it->is_string() ? it->get<std::string>() : it->is_number() ? number(*it) : it->dump();
    facts.push_back({{"key", k}, {"value", one_line(v, 300)}});
  }
  if (d.contains("detail") && d["detail"].is_object()) collect_facts(d["detail"], facts, element_shown);
}

json check_context(const json& c, int max_lines) {
  json j = json::object();
  j["name"] = c.value("name", "?");
  if (c.contains("case")) j["case"] = c["case"];
  if (c.contains("trial")) j["trial"] = c["trial"];
  if (c.contains("output")) j["output"] = c["output"];
  j["repeat_call"] = c.value("run", 0) == 1;
  if (c.contains("message")) j["message"] = c["message"];
  const json d = c.contains("detail") && c["detail"].is_object() ? c["detail"] : json::object();
  // timed_output wraps the check that failed on the timed call's outputs.
  const json& inner = d.contains("detail") && d["detail"].is_object() ? d["detail"] : d;
  if (inner.contains("worst") && inner["worst"].is_object()) j["worst"] = worst_context(inner["worst"]);
  else if (d.contains("worst") && d["worst"].is_object()) j["worst"] = worst_context(d["worst"]);
  else if (inner.contains("got") && inner.contains("expected")) j["worst"] = worst_context(inner); // nonfinite
  const bool tolerance = j["name"] == "tolerance" || d.value("check", "") == "tolerance";
  if (tolerance) j["tolerance"] = tolerance_context(inner);
  json facts = json::array();
  if (!tolerance) collect_facts(d, facts, j.contains("worst"));
  else
    for (const char* k : {"check", "where"})
      if (d.contains(k)) facts.push_back({{"key", k}, {"value", one_line(template_text(d[k]), 300)}});
  j["facts"] = facts;
  j["has_facts"] = !facts.empty();
  if (d.contains("output") && d["output"].is_string() && !d["output"].get<std::string>().empty())
    j["process_output"] = truncated_block(d["output"].get<std::string>(), max_lines);
  if (d.contains("report") && d["report"].is_string() && !d["report"].get<std::string>().empty())
    j["report"] = truncated_block(d["report"].get<std::string>(), max_lines);
  return j;
}

const json* candidate_build(const json& doc) {
  if (!doc.contains("builds") || !doc["builds"].is_array()) return nullptr;
  for (const json& b : doc["builds"])
    if (b.value("role", "") == "candidate") return &b;
  return nullptr;
}

/// `// kforge: param ...` and `// kforge: constraint ...` lines, the text after the keyword.
void declarations(const std::string& source, json& params, json& constraints) {
  for (const auto& line : lines_of(source)) {
    const auto slashes = line.find("//");
    if (slashes == std::string::npos) continue;
    const std::string comment = trim(std::string_view(line).substr(slashes + 2));
    if (comment.rfind("kforge:", 0) != 0) continue;
    const std::string rest = trim(std::string_view(comment).substr(7));
    if (rest.rfind("param ", 0) == 0) params.push_back(trim(rest.substr(6)));
    else if (rest.rfind("constraint ", 0) == 0) constraints.push_back(trim(rest.substr(11)));
  }
}

// ---- ideas -------------------------------------------------------------------------------

struct item_head {
  int number = 0;
  std::size_t indent = 0;
  std::string title;
  std::string rest; // text after a bold title on the same line
};

std::size_t indent_of(std::string_view line) {
  std::size_t n = 0;
  for (char c : line) {
    if (c == ' ') ++n;
    else if (c == '\t') n += 4;
    else break;
  }
  return n;
}

std::string strip_bold(std::string s) {
  for (const char* m : {"**", "__"})
    for (auto at = s.find(m); at != std::string::npos; at = s.find(m)) s.erase(at, 2);
  return s;
}

std::string strip_title_end(std::string s) {
  s = trim(s);
  while (!s.empty() && (s.back() == ':' || s.back() == '-' || s.back() == ' ')) s.pop_back();
  return s;
}

/// "1. Title", "1) Title", "### 1. Title", "**1. Title**", "**1.** Title", "1. **Title**: more", "Idea 1: Title".
std::optional<item_head> match_item(std::string_view line) {
  item_head h;
  h.indent = indent_of(line);
  std::string_view s = line;
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  bool heading = false;
  while (!s.empty() && s.front() == '#') {
    s.remove_prefix(1);
    heading = true;
  }
  while (heading && !s.empty() && s.front() == ' ') s.remove_prefix(1);
  bool bold = false;
  if (s.rfind("**", 0) == 0 || s.rfind("__", 0) == 0) {
    s.remove_prefix(2);
    bold = true;
  }
  if (s.rfind("Idea ", 0) == 0 || s.rfind("idea ", 0) == 0) s.remove_prefix(5);
  std::size_t digits = 0;
  while (digits < s.size() && digits < 3 && std::isdigit(static_cast<unsigned char>(s[digits]))) ++digits;
  if (digits == 0 || digits == s.size()) return std::nullopt;
  const char sep = s[digits];
  if (sep != '.' && sep != ')' && sep != ':') return std::nullopt;
  h.number = std::stoi(std::string(s.substr(0, digits)));
  s.remove_prefix(digits + 1);
  if (!s.empty() && s.front() != ' ' && s.front() != '*' && s.front() != '_' && s.front() != '\t') return std::nullopt;
  if (bold && (s.rfind("**", 0) == 0 || s.rfind("__", 0) == 0)) { // "**1.** Title"
    s.remove_prefix(2);
    bold = false;
  }
  std::string rest = trim(s);
  if (bold) { // "**1. Title**: more"
    const auto close = rest.find("**") != std::string::npos ? rest.find("**") : rest.find("__");
    if (close != std::string::npos) {
      h.title = rest.substr(0, close);
      rest = rest.substr(close + 2);
    } else {
      h.title = rest;
      rest.clear();
    }
  } else if (rest.rfind("**", 0) == 0 || rest.rfind("__", 0) == 0) { // "1. **Title**: more"
    const auto close = rest.find(rest.substr(0, 2), 2);
    if (close != std::string::npos) {
      h.title = rest.substr(2, close - 2);
      rest = rest.substr(close + 2);
    } else {
      h.title = rest;
      rest.clear();
    }
  } else {
    h.title = rest;
    rest.clear();
  }
  h.title = strip_title_end(strip_bold(h.title));
  rest = trim(rest);
  while (!rest.empty() && (rest.front() == ':' || rest.front() == '-' || rest.front() == ' '))
    rest.erase(rest.begin());
  if (rest.rfind("\u2014", 0) == 0 || rest.rfind("\u2013", 0) == 0) rest = trim(rest.substr(3)); // em/en dash
  h.rest = rest;
  return h;
}

idea finish_idea(const item_head& h, std::vector<std::string> body) {
  idea out;
  out.title = h.title;
  if (!h.rest.empty()) body.insert(body.begin(), h.rest);
  while (!body.empty() && trim(body.front()).empty()) body.erase(body.begin());
  while (!body.empty() && trim(body.back()).empty()) body.pop_back();
  if (out.title.empty() && !body.empty()) {
    out.title = strip_title_end(strip_bold(trim(body.front())));
    body.erase(body.begin());
  }
  // Dedent by the first indented line's indentation (the item's text column); lines
  // indented less (a fence at column 0) just lose what they have.
  std::size_t common = 0;
  for (std::size_t i = h.rest.empty() ? 0 : 1; i < body.size(); ++i)
    if (!trim(body[i]).empty()) {
      common = indent_of(body[i]);
      break;
    }
  for (std::size_t i = 0; i < body.size(); ++i) {
    std::string& l = body[i];
    std::size_t cut = 0, width = 0;
    while (cut < l.size() && width < common && (l[cut] == ' ' || l[cut] == '\t')) {
      width += l[cut] == '\t' ? 4 : 1;
      ++cut;
    }
    if (i > 0 || h.rest.empty()) l.erase(0, cut);
    while (!l.empty() && (l.back() == ' ' || l.back() == '\r')) l.pop_back();
    out.body += (i ? "\n" : "") + l;
  }
  return out;
}

} // namespace

// ---- public ------------------------------------------------------------------------------

std::filesystem::path default_prompts_dir() {
  if (const char* v = std::getenv("KFORGE_PROMPTS"); v && *v) return v;
  return data_path("prompts");
}

std::string idea::text() const { return body.empty() ? title : title + "\n" + body; }

json problem_context(const problem::problem& p, const std::optional<device::ceilings>& ceilings,
                     std::string device_name) {
  json j;
  j["name"] = p.name;
  j["description"] = p.description;
  j["backend"] = std::string(problem::backend_name(p.backend));
  j["lang"] = lang_of(p);
  j["dtype"] = std::string(dtype_name(p.dtype));
  j["real_type"] = std::string(dtype_c_name(p.dtype));

  json tensors = json::array();
  int in_slot = 0, out_slot = 0;
  for (const auto& t : p.tensors) {
    const bool out = t.role == problem::tensor_role::output;
    tensors.push_back({{"slot", out ? fmt::format("outputs[{}]", out_slot++) : fmt::format("inputs[{}]", in_slot++)},
                       {"name", t.name},
                       {"role", role_name(t.role)},
                       {"dtype", std::string(dtype_name(t.dtype))},
                       {"c_type", t.follows_real ? "KF_REAL" : std::string(dtype_name(t.dtype))},
                       {"shape", shape_text(t.shape)},
                       {"numel", t.numel()},
                       {"size", si(static_cast<double>(t.numel() * dtype_size(t.dtype)), "B")}});
  }
  j["tensors"] = tensors;

  json cases = json::array();
  for (const auto& c : p.cases) {
    std::string d;
    for (const auto* t : p.inputs())
      if (auto it = c.inputs.find(t->name); it != c.inputs.end())
        d += (d.empty() ? "" : ", ") + fmt::format("`{}` ~ {}", t->name, it->second.text);
    cases.push_back({{"name", c.name}, {"distributions", d}});
  }
  j["cases"] = cases;
  j["hidden_case"] = p.eval.hidden_case && p.cases.size() >= 2;
  j["trials_per_case"] = p.eval.trials_per_case;

  j["tolerance"] = {{"policy", p.tolerance.policy == problem::tolerance_policy::ratio ? "ratio" : "rtol"},
                    {"summary", tolerance_summary(p)},
                    {"precision", p.tolerance.precision},
                    {"deterministic", p.tolerance.deterministic}};

  const auto& w = p.work;
  if (w.flops > 0 || w.min_bytes > 0) {
    json wj = json::object();
    if (w.flops > 0) wj["flops"] = si(w.flops, "FLOP");
    if (w.min_bytes > 0) wj["min_bytes"] = si(w.min_bytes, "B");
    if (w.flops > 0 && w.min_bytes > 0) wj["intensity"] = fmt::format("{:.3g}", w.flops / w.min_bytes);
    j["work"] = wj;
  }

  json dev{{"name", device_name}, {"calibrated", false}};
  if (ceilings) {
    const auto& c = *ceilings;
    dev["calibrated"] = true;
    if (c.copy_bytes_per_s > 0) dev["copy_bandwidth"] = si(c.copy_bytes_per_s, "B/s");
    if (c.peak_flops(p.dtype) > 0) {
      dev["peak"] = si(c.peak_flops(p.dtype), "FLOP/s");
      dev["peak_kind"] = peak_name(p.dtype);
    }
    if (auto r = device::roofline_of(c, w.flops, w.min_bytes, p.dtype, 1.0); r && r->floor_s > 0) {
      json rj{{"floor", duration(r->floor_s)}, {"floor_s", r->floor_s}, {"bound", r->bound}};
      if (c.copy_bytes_per_s > 0 && w.min_bytes > 0) rj["memory_time"] = duration(w.min_bytes / c.copy_bytes_per_s);
      if (c.peak_flops(p.dtype) > 0 && w.flops > 0) rj["compute_time"] = duration(w.flops / c.peak_flops(p.dtype));
      dev["roofline"] = rj;
    }
  }
  j["device"] = dev;

  json baselines = json::array();
  for (const auto& b : p.baselines) baselines.push_back(b.name);
  j["baselines"] = baselines;
  j["has_baselines"] = !baselines.empty();

  const std::string ref = trim_end(read_file(p.reference));
  j["reference"] = {{"file", p.reference.filename().string()}, {"source", ref}, {"fence", fence_for(ref)},
                    {"torch", p.torch.has_value()}};
  if (p.torch) {
    nlohmann::json params = nlohmann::json::array();
    for (auto* t : p.inputs())
      if (t->role == problem::tensor_role::param) params.push_back(fmt::format("`{}` is `{}`", t->name, t->torch_name));
    j["reference"]["params"] = params;
    j["reference"]["has_params"] = !params.empty();
  }
  return j;
}

json candidate_context(std::string source, std::string label, const json* eval_doc) {
  json j;
  json params = json::array(), constraints = json::array();
  declarations(source, params, constraints);
  j["fence"] = fence_for(source);
  j["source"] = trim_end(std::move(source));
  j["label"] = std::move(label);
  j["params"] = params;
  j["constraints"] = constraints;
  j["has_params"] = !params.empty();
  j["evaluated"] = eval_doc != nullptr;
  if (eval_doc) {
    const json timing = timing_context(*eval_doc);
    j["status"] = eval_doc->value("status", "?");
    j["passed"] = eval_doc->value("passed", false);
    j["summary"] = summary_of(*eval_doc, timing);
    if (!timing.is_null()) j["timing"] = timing;
  }
  return j;
}

json feedback_context(const json& doc, int max_diagnostic_lines) {
  json j;
  j["status"] = doc.value("status", "?");
  j["passed"] = doc.value("passed", false);
  j["message"] = doc.value("message", "");
  const json* build = candidate_build(doc);
  if (j["status"] == "build_failed") {
    std::string diag;
    const json& f = doc.contains("failure") && doc["failure"].is_object() ? doc["failure"] : json::object();
    if (f.contains("detail") && f["detail"].contains("diagnostics")) diag = f["detail"]["diagnostics"];
    else if (build) diag = build->value("diagnostics", "");
    json b = truncated_block(diag, max_diagnostic_lines);
    if (build) b["toolchain"] = build->value("toolchain", "");
    j["build"] = b;
  } else if (!j["passed"].get<bool>() && doc.contains("failure") && doc["failure"].is_object()) {
    j["check"] = check_context(doc["failure"], max_diagnostic_lines);
    j["checks_failed"] = doc.value("checks_failed", 1);
  }
  const json timing = timing_context(doc);
  if (!timing.is_null()) j["timing"] = timing;
  json resources = json::array();
  if (build && build->contains("resources") && (*build)["resources"].is_array())
    for (const json& r : (*build)["resources"]) {
      const int spill = r.value("spill_store_bytes", 0) + r.value("spill_load_bytes", 0);
      resources.push_back({{"kernel", demangle(r.value("kernel", "?"))},
                           {"registers", r.value("registers", 0)},
                           {"smem_bytes", r.value("smem_bytes", 0)},
                           {"stack_bytes", r.value("stack_bytes", 0)},
                           {"spill_store_bytes", r.value("spill_store_bytes", 0)},
                           {"spill_load_bytes", r.value("spill_load_bytes", 0)},
                           {"spills", spill > 0}});
    }
  j["resources"] = resources;
  j["has_resources"] = !resources.empty();
  if (build) j["toolchain"] = build->value("toolchain", "");
  j["review"] = doc.contains("review") && doc["review"].is_array() ? doc["review"] : json::array();
  return j;
}

std::string dialect_for(const problem::problem& p, std::string_view source_hint) {
  if (p.backend == problem::backend_kind::cpu) return "cpp";
  for (std::string_view marker : {"<cute/", "<cutlass/", "\"cute/", "\"cutlass/"})
    if (source_hint.find(marker) != std::string_view::npos) return "cute";
  return "cuda";
}

prompt_builder::prompt_builder(std::filesystem::path templates_dir, int max_diagnostic_lines)
    : m_templates(std::move(templates_dir)), m_max_diagnostic_lines(max_diagnostic_lines) {}

bool is_dialect(std::string_view d) {
  return d == "cuda" || d == "cute" || d == "cpp" || d == "triton" || d == "torch-cuda";
}

bool is_python_dialect(std::string_view d) { return d == "triton" || d == "torch-cuda"; }

prompt_builder& prompt_builder::use_dialect(std::string dialect) {
  if (!dialect.empty() && !is_dialect(dialect))
    KFORGE_THROW(usage, "unknown dialect '{}' (known: cuda, cute, cpp, triton, torch-cuda)", dialect);
  m_dialect = std::move(dialect);
  return *this;
}

std::string prompt_builder::system_prompt(std::string_view dialect) const {
  if (!is_dialect(dialect))
    KFORGE_THROW(internal, "unknown dialect '{}' (known: cuda, cute, cpp, triton, torch-cuda)", dialect);
  const std::string d(dialect);
  // Template keys cannot hold '-': torch-cuda is dialect.torch_cuda there.
  std::string key = d;
  std::replace(key.begin(), key.end(), '-', '_');
  return m_templates.render("system", {{"dialect", {{"name", d}, {key, true}, {"python", is_python_dialect(d)}}}});
}

json prompt_builder::task_context(const problem::problem& p, const device_facts& dev, const candidate_ref& c) const {
  json ctx;
  ctx["problem"] = problem_context(p, dev.ceilings, dev.name);
  ctx["candidate"] = candidate_context(c.source, c.label, c.eval);
  ctx["first"] = c.source.empty(); // no seed yet (a [torch] problem): the task is the first kernel
  if (c.eval) {
    ctx["feedback"] = feedback_context(*c.eval, m_max_diagnostic_lines);
    ctx["feedback"]["label"] = c.label;
    if (!c.profile.empty()) ctx["feedback"]["profile"] = {{"text", trim(c.profile)}, {"fence", fence_for(c.profile)}};
  } else if (!c.profile.empty()) {
    KFORGE_THROW(internal, "candidate '{}': a profile digest is shown with its evaluation, and it has none", c.label);
  }
  ctx["dialect"] = m_dialect.empty() ? dialect_for(p, c.source) : m_dialect;
  ctx["lang"] = is_python_dialect(ctx["dialect"].get<std::string>()) ? "python" : lang_of(p);
  return ctx;
}

llm::request prompt_builder::make(const std::string& task, const json& ctx) const {
  llm::request r;
  r.system = system_prompt(ctx["dialect"].get<std::string>());
  r.cache_system = true;
  r.messages.push_back({llm::role::user, m_templates.render(task, ctx)});
  return r;
}

llm::request prompt_builder::implement(const problem::problem& p, const device_facts& dev,
                                       const candidate_ref& current) const {
  return make("implement", task_context(p, dev, current));
}

llm::request prompt_builder::fix(const problem::problem& p, const device_facts& dev, const candidate_ref& failed,
                                 int attempt, int max_attempts) const {
  if (!failed.eval) KFORGE_THROW(internal, "fix: candidate '{}' has no evaluation to fix from", failed.label);
  if (attempt < 1 || attempt > max_attempts)
    KFORGE_THROW(internal, "fix: attempt {} of {} is out of range", attempt, max_attempts);
  json ctx = task_context(p, dev, failed);
  ctx["attempt"] = attempt;
  ctx["max_attempts"] = max_attempts;
  ctx["last_attempt"] = attempt == max_attempts;
  return make("fix", ctx);
}

llm::request prompt_builder::ideas(const problem::problem& p, const device_facts& dev, const candidate_ref& best,
                                   const std::vector<idea_outcome>& tried, int n) const {
  if (n < 1) KFORGE_THROW(internal, "ideas: asked for {} ideas", n);
  json ctx = task_context(p, dev, best);
  json rows = json::array();
  for (std::size_t i = 0; i < tried.size(); ++i) {
    std::string title = trim(tried[i].idea.substr(0, tried[i].idea.find('\n')));
    std::string outcome = tried[i].outcome;
    if (outcome.empty()) outcome = tried[i].speedup ? ratio(*tried[i].speedup) : "unknown";
    for (std::string* s : {&title, &outcome}) { // a '|' would end the table cell
      *s = one_line(*s, 200);
      for (auto at = s->find('|'); at != std::string::npos; at = s->find('|', at + 2)) s->replace(at, 1, "\\|");
    }
    rows.push_back({{"number", i + 1}, {"title", title}, {"outcome", outcome}});
  }
  ctx["tried"] = rows;
  ctx["has_tried"] = !rows.empty();
  ctx["n"] = n;
  return make("ideas", ctx);
}

llm::request prompt_builder::implement_idea(const problem::problem& p, const device_facts& dev,
                                            const candidate_ref& parent, const std::string& idea) const {
  json ctx = task_context(p, dev, parent);
  ctx["idea"] = trim(idea);
  return make("implement_idea", ctx);
}

std::vector<idea> parse_ideas(std::string_view answer, int max) {
  std::vector<idea> out;
  if (max <= 0) return out;
  std::optional<item_head> cur;
  std::vector<std::string> body;
  bool in_fence = false;
  for (const auto& line : lines_of(answer)) {
    const std::string t = trim(line);
    if (t.rfind("```", 0) == 0 || t.rfind("~~~", 0) == 0) {
      in_fence = !in_fence;
      if (cur) body.push_back(line);
      continue;
    }
    if (!in_fence) {
      auto h = match_item(line);
      const bool next = h && (cur ? h->number == cur->number + 1 && h->indent <= cur->indent : h->number == 1);
      if (next) {
        if (cur) {
          out.push_back(finish_idea(*cur, std::move(body)));
          if (static_cast<int>(out.size()) == max) return out;
        }
        cur = std::move(h);
        body.clear();
        continue;
      }
    }
    if (cur) body.push_back(line);
  }
  if (cur) out.push_back(finish_idea(*cur, std::move(body)));
  std::erase_if(out, [](const idea& i) { return i.title.empty() && i.body.empty(); });
  if (static_cast<int>(out.size()) > max) out.resize(max);
  return out;
}

} // namespace kforge::propose
