#include "report/html_report.hpp"

#include "core/build_info.hpp"
#include "core/dtype.hpp"
#include "core/error.hpp"
#include "core/text.hpp"
#include "core/fs.hpp"
#include "device/calibration.hpp"
#include "problem/problem.hpp"
#include "report/run_report.hpp"

#include <fmt/format.h>

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <ctime>
#include <map>
#include <set>

namespace kforge::report {

using nlohmann::json;
namespace fs = std::filesystem;

namespace {

json opt(const std::optional<double>& v) { return v ? json(*v) : json(); }
json opt(const std::optional<int64_t>& v) { return v ? json(*v) : json(); }

json parse_or(const std::string& text, json fallback) {
  if (text.empty()) return fallback;
  auto j = json::parse(text, nullptr, false);
  return j.is_discarded() ? fallback : j;
}

/// Seconds since the epoch of the store's ISO-8601 UTC stamps ("2026-12-03T21:30:28.483Z").
std::optional<double> epoch_s(const std::string& iso) {
  std::tm tm{};
  double frac = 0;
  int consumed = 0;
  if (std::sscanf(iso.c_str(), "%d-%d-%dT%d:%d:%d%n", &tm.tm_year, &tm.tm_mon, &tm.tm_mday, &tm.tm_hour, &tm.tm_min,
                  &tm.tm_sec, &consumed) != 6)
    return std::nullopt;
  if (iso.size() > static_cast<std::size_t>(consumed) && iso[consumed] == '.') frac = std::atof(iso.c_str() + consumed);
  tm.tm_year -= 1900;
  tm.tm_mon -= 1;
  return static_cast<double>(::timegm(&tm)) + frac;
}

std::string now_iso() {
  const auto t = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
  std::tm tm{};
  ::gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

std::string hostname() {
  char host[256] = {};
  return ::gethostname(host, sizeof host - 1) == 0 ? std::string(host) : std::string();
}

json base_document(const std::string& kind, const std::string& title) {
  return {{"schema", "kforge.report/1"},
          {"kind", kind},
          {"title", title},
          {"generated_at", now_iso()},
          {"kforge", {{"version", KFORGE_VERSION}, {"commit", std::string(build_commit())}}},
          {"machine", {{"device", ""}, {"host", hostname()}, {"ceilings", nullptr}}},
          {"problem", nullptr},
          {"run", nullptr},
          {"reproduce", {{"seed", nullptr}, {"commands", json::array()}, {"notes", json::array()}}},
          {"evaluations", json::array()},
          {"best", nullptr},
          {"candidates", json::array()},
          {"ideas", json::array()},
          {"statuses", json::object()},
          {"failures", json::array()},
          {"llm", {{"calls", 0}, {"by_model", json::array()}}},
          {"suite", nullptr}};
}

json ceilings_json(const std::string& device) {
  if (device.empty()) return nullptr;
  auto c = device::load_ceilings(device);
  if (!c) return nullptr;
  return {{"copy_bytes_per_s", c->copy_bytes_per_s}, {"fp32_flops", c->fp32_flops}, {"tf32_flops", c->tf32_flops},
          {"bf16_flops", c->bf16_flops},             {"fp64_flops", c->fp64_flops}, {"measured_at", c->measured_at}};
}

/// The problem's section: its work counts and dtype from its directory, when it can still be
/// loaded there (a report is about the record: a moved problem only loses the roofline).
json problem_json(const std::string& name, const std::string& path) {
  json j{{"name", name}, {"path", path}, {"backend", ""}, {"dtype", ""}, {"flops", 0}, {"min_bytes", 0}};
  try {
    const auto p = problem::load(path);
    j["backend"] = std::string(problem::backend_name(p.backend));
    j["dtype"] = std::string(dtype_name(p.dtype));
    j["flops"] = p.work.flops;
    j["min_bytes"] = p.work.min_bytes;
  } catch (const std::exception& e) {
    j["note"] = fmt::format("the problem could not be loaded from {} ({}): no work counts", path, e.what());
  }
  return j;
}

/// Why evaluations failed: one row per failing check (or, without a failing check, per
/// status: build_failed, crashed, timeout...), counting evaluations, with the input
/// distributions it failed on and the first one's message.
struct failure_tally {
  struct row {
    int count = 0;
    std::map<std::string, int> cases;
    std::string example;
  };
  std::map<std::string, row> rows;
  std::set<int64_t> seen;

  void add(const store::evaluation_record& ev) {
    if (ev.status == "passed" || ev.status == "running" || !seen.insert(ev.id).second) return;
    std::set<std::string> names;
    for (auto& c : ev.checks)
      if (!c.passed) {
        auto& r = rows[c.name];
        if (names.insert(c.name).second) {
          ++r.count;
          if (r.example.empty()) r.example = ev.message;
        }
        if (!c.case_name.empty()) ++r.cases[c.case_name];
      }
    if (names.empty()) {
      auto& r = rows[ev.status];
      ++r.count;
      if (r.example.empty()) r.example = ev.message;
    }
  }
  void add_proposal(const store::proposal_record& p) {
    if (p.status == "ok") return;
    auto& r = rows["answer: " + p.status];
    ++r.count;
    if (r.example.empty()) r.example = p.error;
  }
  [[nodiscard]] json to_json() const {
    std::vector<std::pair<std::string, row>> v(rows.begin(), rows.end());
    std::stable_sort(v.begin(), v.end(), [](auto& a, auto& b) { return a.second.count > b.second.count; });
    json out = json::array();
    for (auto& [name, r] : v) out.push_back({{"check", name}, {"count", r.count}, {"cases", r.cases}, {"example", r.example}});
    return out;
  }
};

/// LLM use per (provider, model, role), and the run's running totals in time order.
json llm_by_model(const std::vector<store::llm_call_record>& calls) {
  std::map<std::tuple<std::string, std::string, std::string>, json> rows;
  for (auto& c : calls) {
    auto& r = rows[{c.provider, c.model, c.role}];
    if (r.is_null())
      r = {{"provider", c.provider}, {"model", c.model}, {"role", c.role}, {"calls", 0}, {"failed_calls", 0},
           {"input_tokens", 0},      {"output_tokens", 0}, {"cost_usd", nullptr}, {"duration_s", 0.0}};
    r["calls"] = r["calls"].get<int64_t>() + 1;
    if (!c.error_kind.empty()) r["failed_calls"] = r["failed_calls"].get<int64_t>() + 1;
    r["input_tokens"] = r["input_tokens"].get<int64_t>() + c.input_tokens;
    r["output_tokens"] = r["output_tokens"].get<int64_t>() + c.output_tokens;
    if (c.cost_usd) r["cost_usd"] = (r["cost_usd"].is_number() ? r["cost_usd"].get<double>() : 0.0) + *c.cost_usd;
    r["duration_s"] = r["duration_s"].get<double>() + c.duration_s;
  }
  json out = json::array();
  for (auto& [k, r] : rows) out.push_back(r);
  return out;
}

json llm_section(const std::vector<store::llm_call_record>& calls) {
  json j{{"calls", 0}, {"failed_calls", 0}, {"input_tokens", 0}, {"output_tokens", 0}, {"cached_input_tokens", 0},
         {"cost_usd", 0.0}, {"estimated_calls", 0}};
  int64_t n = 0, failed = 0, in = 0, out = 0, cached = 0, estimated = 0;
  double cost = 0;
  for (auto& c : calls) {
    ++n;
    failed += !c.error_kind.empty();
    in += c.input_tokens;
    out += c.output_tokens;
    cached += c.cached_input_tokens;
    estimated += c.usage_source == "estimated";
    cost += c.cost_usd.value_or(0.0);
  }
  j = {{"calls", n},          {"failed_calls", failed}, {"input_tokens", in}, {"output_tokens", out},
       {"cached_input_tokens", cached}, {"cost_usd", cost}, {"estimated_calls", estimated},
       {"by_model", llm_by_model(calls)}};
  return j;
}

/// (time the call ended, tokens, dollars), in time order: what the run had spent by a moment.
struct spend_curve {
  std::vector<std::tuple<double, int64_t, double>> points;
  explicit spend_curve(const std::vector<store::llm_call_record>& calls) {
    for (auto& c : calls)
      if (auto t = epoch_s(c.started_at))
        points.emplace_back(*t + c.duration_s, c.input_tokens + c.output_tokens, c.cost_usd.value_or(0.0));
    std::sort(points.begin(), points.end());
  }
  [[nodiscard]] std::pair<int64_t, double> at(double t) const {
    int64_t tokens = 0;
    double cost = 0;
    for (auto& [end, n, usd] : points) {
      if (end > t) break;
      tokens += n;
      cost += usd;
    }
    return {tokens, cost};
  }
};

std::string language_of(const std::string& backend) { return backend == "cuda" ? "cuda" : "cpp"; }

/// The tree's nodes: every candidate evaluated, and their ancestors up to a root.
json candidate_nodes(const store::store& db, const json& evaluations, std::optional<int64_t> best_candidate) {
  std::map<int64_t, json> nodes;
  for (auto& e : evaluations) {
    const int64_t id = e["candidate_id"].get<int64_t>();
    auto& n = nodes[id];
    const bool passed = e["status"] == "passed";
    if (n.is_null()) {
      n = {{"candidate_id", id},       {"parent_id", e["parent_id"]}, {"label", e["label"]},
           {"origin", e["origin"]},    {"status", e["status"]},       {"speedup", e["speedup"]},
           {"median_s", e["median_s"]}, {"round", e.value("round", json())}, {"idea_id", e.value("idea_id", json())},
           {"best", best_candidate && *best_candidate == id}};
    } else if (passed) { // a candidate's node shows the best it did
      const bool was_passed = n["status"] == "passed";
      const bool faster = e["median_s"].is_number() && (!n["median_s"].is_number() || e["median_s"] < n["median_s"]);
      if (!was_passed || faster) {
        n["status"] = "passed";
        n["speedup"] = e["speedup"];
        n["median_s"] = e["median_s"];
      }
    }
  }
  // Ancestors that were not evaluated here (a tuned source's template, an earlier run's best).
  std::vector<int64_t> pending;
  for (auto& [id, n] : nodes)
    if (n["parent_id"].is_number()) pending.push_back(n["parent_id"].get<int64_t>());
  while (!pending.empty() && nodes.size() < 5000) {
    const int64_t id = pending.back();
    pending.pop_back();
    if (nodes.count(id)) continue;
    auto c = db.get_candidate(id);
    if (!c) continue;
    nodes[id] = {{"candidate_id", id}, {"parent_id", opt(c->parent_id)}, {"label", c->label}, {"origin", c->origin},
                 {"status", "not evaluated"}, {"speedup", nullptr}, {"median_s", nullptr}, {"round", nullptr},
                 {"idea_id", nullptr}, {"best", false}};
    if (c->parent_id) pending.push_back(*c->parent_id);
  }
  json out = json::array();
  for (auto& [id, n] : nodes) {
    if (n["parent_id"].is_number() && !nodes.count(n["parent_id"].get<int64_t>())) n["parent_id"] = nullptr;
    out.push_back(n);
  }
  return out;
}

/// The best's section: its source, its parent's, and the diff between them.
json best_json(const store::store& db, int64_t candidate_id, const json& facts, const std::string& backend) {
  auto c = db.get_candidate(candidate_id);
  if (!c) return nullptr;
  json b = facts;
  b["candidate_id"] = candidate_id;
  b["label"] = c->label;
  b["language"] = language_of(backend);
  b["source"] = c->source;
  b["parent"] = nullptr;
  b["diff"] = nullptr;
  if (c->parent_id)
    if (auto parent = db.get_candidate(*c->parent_id)) {
      b["parent"] = {{"candidate_id", parent->id}, {"label", parent->label}, {"source", parent->source}};
      b["diff"] = unified_diff(parent->source, c->source, fmt::format("parent #{} {}", parent->id, parent->label),
                               fmt::format("best #{} {}", c->id, c->label));
    }
  return b;
}

std::string flag_number(const json& v) {
  if (v.is_number_integer()) return std::to_string(v.get<int64_t>());
  if (v.is_number()) return fmt::format("{:g}", v.get<double>());
  return v.is_string() ? v.get<std::string>() : v.dump();
}

/// `kforge optimize` with the run's options spelled as flags (a run's whole configuration is
/// in the report too), and the commands that read it back.
std::vector<std::string> run_commands(const store::run_record& run, const json& cfg) {
  std::string cmd = fmt::format("kforge optimize {} --strategy {}", run.problem_path, run.strategy);
  static const std::pair<const char*, const char*> flags[] = {
      {"seed", "--seed"},           {"max_evaluations", "--evaluations"}, {"max_tokens", "--tokens"},
      {"max_cost_usd", "--cost"},   {"max_wall_s", "--wall"},             {"target_fraction", "--target"},
      {"patience", "--patience"},   {"max_rounds", "--rounds"},           {"tune_method", "--tune-method"},
      {"tune_budget", "--tune-budget"}, {"ideas", "--ideas"},             {"implementations", "--implementations"},
      {"islands", "--islands"},     {"migrate_every", "--migrate-every"}, {"keep", "--keep"},
      {"max_fixes", "--max-fixes"}, {"trials", "--trials"},               {"time_budget_s", "--time-budget"}};
  for (auto& [key, flag] : flags) {
    if (!cfg.contains(key)) continue;
    const auto& v = cfg[key];
    if (v.is_number() && v.get<double>() == 0 && std::string_view(key) != "patience") continue; // 0: unlimited
    cmd += fmt::format(" {} {}", flag, flag_number(v));
  }
  if (cfg.contains("llm") && cfg["llm"].is_array())
    for (auto& m : cfg["llm"]) cmd += " --llm " + flag_number(m);
  return {cmd, fmt::format("kforge show run {}", run.id), fmt::format("kforge export {}", run.id)};
}

void count_statuses(json& doc) {
  json s = json::object();
  for (auto& e : doc["evaluations"]) s[e["status"].get<std::string>()] = s.value(e["status"].get<std::string>(), 0) + 1;
  doc["statuses"] = s;
}

/// The best passing median among evaluations 1..i, written into each.
void best_so_far(json& evaluations) {
  std::optional<double> best;
  for (auto& e : evaluations) {
    if (e["status"] == "passed" && e["median_s"].is_number())
      best = best ? std::min(*best, e["median_s"].get<double>()) : e["median_s"].get<double>();
    e["best_so_far_s"] = opt(best);
  }
}

json summary_of(const json& doc, double wall_s) {
  int passed = 0;
  for (auto& e : doc["evaluations"]) passed += e["status"] == "passed";
  const json& best = doc["best"];
  auto num = [&](const char* k) { return best.is_object() && best.contains(k) ? best[k] : json(); };
  const json& llm = doc["llm"];
  return {{"evaluations", doc["evaluations"].size()},
          {"passed", passed},
          {"best_median_s", num("median_s")},
          {"best_speedup", num("speedup")},
          {"best_roofline_fraction", num("roofline_fraction")},
          {"reference_median_s", num("reference_median_s")},
          {"tokens", llm.value("input_tokens", int64_t{0}) + llm.value("output_tokens", int64_t{0})},
          {"cost_usd", llm.value("cost_usd", 0.0)},
          {"wall_s", wall_s > 0 ? json(wall_s) : json()}};
}

// ---- a line diff (longest common subsequence), for the best against its parent

} // namespace

std::string unified_diff(const std::string& from, const std::string& to, const std::string& from_name,
                         const std::string& to_name, int context) {
  if (from == to) return "";
  const auto a = lines_of(from), b = lines_of(to);
  // Common prefix and suffix first: a model's edit usually touches a few lines.
  std::size_t pre = 0;
  while (pre < a.size() && pre < b.size() && a[pre] == b[pre]) ++pre;
  std::size_t suf = 0;
  while (suf < a.size() - pre && suf < b.size() - pre && a[a.size() - 1 - suf] == b[b.size() - 1 - suf]) ++suf;
  const std::size_t n = a.size() - pre - suf, m = b.size() - pre - suf;
  // ops over the whole files: ' ' kept, '-' from a, '+' from b.
  std::vector<std::pair<char, std::string_view>> ops;
  for (std::size_t i = 0; i < pre; ++i) ops.emplace_back(' ', a[i]);
  if (n * m <= 25'000'000) {
    std::vector<std::vector<uint32_t>> L(n + 1, std::vector<uint32_t>(m + 1, 0));
    for (std::size_t i = n; i-- > 0;)
      for (std::size_t j = m; j-- > 0;)
        L[i][j] = a[pre + i] == b[pre + j] ? L[i + 1][j + 1] + 1 : std::max(L[i + 1][j], L[i][j + 1]);
    std::size_t i = 0, j = 0;
    while (i < n || j < m) {
      if (i < n && j < m && a[pre + i] == b[pre + j]) {
        ops.emplace_back(' ', a[pre + i]);
        ++i, ++j;
      } else if (i < n && (j == m || L[i + 1][j] >= L[i][j + 1])) { // removals first, as diff -u
        ops.emplace_back('-', a[pre + i++]);
      } else {
        ops.emplace_back('+', b[pre + j++]);
      }
    }
  } else { // too large to align: the middle replaced whole
    for (std::size_t i = 0; i < n; ++i) ops.emplace_back('-', a[pre + i]);
    for (std::size_t j = 0; j < m; ++j) ops.emplace_back('+', b[pre + j]);
  }
  for (std::size_t i = a.size() - suf; i < a.size(); ++i) ops.emplace_back(' ', a[i]);

  std::string out = fmt::format("--- {}\n+++ {}\n", from_name, to_name);
  const std::size_t total = ops.size();
  std::size_t k = 0;
  while (k < total) {
    while (k < total && ops[k].first == ' ') ++k;
    if (k == total) break;
    // A hunk: from `context` lines before this change to `context` after the last change
    // that lies within 2*context lines of the previous one.
    const std::size_t start = k >= static_cast<std::size_t>(context) ? k - context : 0;
    std::size_t end = k, last_change = k;
    while (end < total) {
      if (ops[end].first != ' ') last_change = end;
      else if (end - last_change > static_cast<std::size_t>(2 * context)) break;
      ++end;
    }
    end = std::min(total, last_change + 1 + context);
    std::size_t a_line = 1, b_line = 1;
    for (std::size_t q = 0; q < start; ++q) {
      a_line += ops[q].first != '+';
      b_line += ops[q].first != '-';
    }
    std::size_t a_count = 0, b_count = 0;
    for (std::size_t q = start; q < end; ++q) {
      a_count += ops[q].first != '+';
      b_count += ops[q].first != '-';
    }
    out += fmt::format("@@ -{},{} +{},{} @@\n", a_count ? a_line : a_line - 1, a_count, b_count ? b_line : b_line - 1,
                       b_count);
    for (std::size_t q = start; q < end; ++q) {
      out += ops[q].first;
      out += ops[q].second;
      out += '\n';
    }
    k = end;
  }
  return out;
}

// ------------------------------------------------------------------------------ a run

json report_of_run(const store::store& db, int64_t run_id) {
  const json rj = run_json(db, run_id); // throws "no run N"
  const auto run = *db.get_run(run_id);
  json doc = base_document("run", fmt::format("run {}: {} ({})", run.id, run.problem, run.strategy));
  doc["problem"] = problem_json(run.problem, run.problem_path);
  const std::string backend = doc["problem"]["backend"];

  const auto start = epoch_s(run.started_at);
  const auto finish = epoch_s(run.finished_at);
  const double wall = start && finish ? *finish - *start : 0.0;
  const json cfg = rj["run"]["config"];
  doc["run"] = {{"id", run.id},
                {"strategy", run.strategy},
                {"status", run.status},
                {"stop_reason", run.stop_reason},
                {"started_at", run.started_at},
                {"finished_at", rj["run"]["finished_at"]},
                {"wall_s", wall > 0 ? json(wall) : json()},
                {"resumes", run.resumes},
                {"config", cfg}};
  doc["reproduce"]["seed"] = cfg.contains("seed") ? json(flag_number(cfg["seed"])) : json();
  doc["reproduce"]["commands"] = run_commands(run, cfg);
  if (cfg.contains("llm") && cfg["llm"].is_array())
    for (auto& m : cfg["llm"])
      if (m.is_string() && m.get<std::string>().starts_with("replay:"))
        doc["reproduce"]["notes"].push_back("LLM answers replay from " + m.get<std::string>().substr(7));

  const auto calls = db.llm_calls_of(run_id);
  const spend_curve spend(calls);
  const auto stored = db.run_evaluations(run_id); // the same order as rj["evaluations"]
  failure_tally failures;
  std::string device;
  int index = 0;
  for (std::size_t i = 0; i < rj["evaluations"].size() && i < stored.size(); ++i) {
    const json& e = rj["evaluations"][i];
    json out = e;
    out.erase("id");
    out["index"] = ++index;
    out["evaluation_id"] = e["id"];
    out["roofline_fraction"] = nullptr;
    out["t_s"] = nullptr;
    out["tokens"] = 0;
    out["cost_usd"] = 0.0;
    // When the run had it: a reused evaluation counts at the moment the run recorded it.
    std::optional<double> at = epoch_s(stored[i].created_at);
    if (auto ev = db.get_evaluation(stored[i].evaluation_id)) {
      const json summary = parse_or(ev->summary_json, json::object());
      out["roofline_fraction"] = opt(number_at(summary, {"timing", "roofline", "candidate_fraction"}));
      if (device.empty() && summary.contains("device") && summary["device"].is_string()) device = summary["device"];
      if (!stored[i].reused)
        if (auto f = epoch_s(ev->finished_at)) at = f;
      failures.add(*ev);
    }
    if (at && start) {
      out["t_s"] = std::max(0.0, *at - *start);
      const auto [tokens, cost] = spend.at(*at);
      out["tokens"] = tokens;
      out["cost_usd"] = cost;
    }
    doc["evaluations"].push_back(out);
  }
  for (auto& p : db.proposals_of(run_id)) failures.add_proposal(p);
  doc["failures"] = failures.to_json();
  best_so_far(doc["evaluations"]);
  count_statuses(doc);

  doc["machine"]["device"] = device;
  doc["machine"]["ceilings"] = ceilings_json(device);
  doc["ideas"] = rj["ideas"];
  doc["llm"] = llm_section(calls);
  std::optional<int64_t> best_candidate;
  if (rj["best"].is_object()) {
    best_candidate = rj["best"]["candidate_id"].get<int64_t>();
    json facts{{"evaluation_id", rj["best"]["evaluation_id"]},   {"median_s", rj["best"]["median_s"]},
               {"reference_median_s", rj["best"]["reference_median_s"]}, {"speedup", rj["best"]["speedup"]},
               {"roofline_fraction", rj["best"]["roofline_fraction"]}};
    doc["best"] = best_json(db, *best_candidate, facts, backend);
  }
  doc["candidates"] = candidate_nodes(db, doc["evaluations"], best_candidate);
  doc["summary"] = summary_of(doc, wall);
  return doc;
}

// ------------------------------------------------------------------------------ a problem

json report_of_problem(const store::store& db, const std::string& problem) {
  const auto rows = db.experiment_log(problem, 0); // oldest first, controls left out
  if (rows.empty()) KFORGE_THROW(usage, "no evaluations of problem '{}' in the record (kforge log lists them)", problem);
  json doc = base_document("problem", fmt::format("problem {}: {} evaluations", problem, rows.size()));

  std::string path, device;
  double first = 0, last = 0;
  failure_tally failures;
  std::optional<double> best_median;
  std::optional<int64_t> best_candidate, best_eval;
  json best_facts;
  int index = 0;
  for (auto& r : rows) {
    const auto ev = db.get_evaluation(r.evaluation_id);
    const auto cand = db.get_candidate(r.candidate_id);
    const json summary = ev ? parse_or(ev->summary_json, json::object()) : json::object();
    if (device.empty() && summary.contains("device") && summary["device"].is_string()) device = summary["device"];
    std::optional<double> sp;
    if (r.status == "passed" && r.median_s && r.reference_median_s && *r.median_s > 0)
      sp = *r.reference_median_s / *r.median_s;
    json e{{"index", ++index},
           {"evaluation_id", r.evaluation_id},
           {"candidate_id", r.candidate_id},
           {"parent_id", cand ? opt(cand->parent_id) : json()},
           {"label", r.label},
           {"origin", r.origin},
           {"status", r.status},
           {"message", r.message},
           {"round", nullptr},
           {"step", nullptr},
           {"idea_id", nullptr},
           {"reused", false},
           {"hypothesis", r.hypothesis},
           {"median_s", opt(r.median_s)},
           {"reference_median_s", opt(r.reference_median_s)},
           {"speedup", opt(sp)},
           {"roofline_fraction", opt(number_at(summary, {"timing", "roofline", "candidate_fraction"}))},
           {"t_s", nullptr},
           {"tokens", 0},
           {"cost_usd", 0.0}};
    if (ev) {
      if (auto f = epoch_s(ev->finished_at.empty() ? ev->started_at : ev->finished_at)) {
        if (first == 0) first = *f;
        last = std::max(last, *f);
        e["t_s"] = std::max(0.0, *f - first);
      }
      failures.add(*ev);
    }
    if (r.status == "passed" && r.median_s && (!best_median || *r.median_s < *best_median)) {
      best_median = r.median_s;
      best_candidate = r.candidate_id;
      best_eval = r.evaluation_id;
      best_facts = {{"evaluation_id", r.evaluation_id}, {"median_s", *r.median_s},
                    {"reference_median_s", opt(r.reference_median_s)}, {"speedup", opt(sp)},
                    {"roofline_fraction", e["roofline_fraction"]}};
    }
    doc["evaluations"].push_back(e);
  }
  // Where the problem lives, and what its searches spent: from its runs.
  std::vector<store::llm_call_record> calls;
  for (auto& run : db.list_runs(0))
    if (run.problem == problem) {
      if (path.empty()) path = run.problem_path;
      auto c = db.llm_calls_of(run.id);
      calls.insert(calls.end(), c.begin(), c.end());
    }
  doc["problem"] = problem_json(problem, path);
  if (path.empty()) doc["problem"]["note"] = "no search run recorded where the problem lives: no work counts";
  const std::string backend = doc["problem"]["backend"];
  doc["failures"] = failures.to_json();
  best_so_far(doc["evaluations"]);
  count_statuses(doc);
  doc["machine"]["device"] = device;
  doc["machine"]["ceilings"] = ceilings_json(device);
  doc["llm"] = llm_section(calls);
  if (best_candidate) doc["best"] = best_json(db, *best_candidate, best_facts, backend);
  doc["candidates"] = candidate_nodes(db, doc["evaluations"], best_candidate);
  doc["reproduce"]["commands"] = {fmt::format("kforge log {}", problem)};
  if (best_eval) doc["reproduce"]["commands"].push_back(fmt::format("kforge show {}", *best_eval));
  doc["summary"] = summary_of(doc, last > first ? last - first : 0.0);
  return doc;
}

// ------------------------------------------------------------------------------ a suite

json report_of_suite(const store::store* db, const json& suite) {
  if (!suite.is_object() || suite.value("schema", "") != "kforge.suite/1" || !suite.contains("rows"))
    KFORGE_THROW(usage, "not a kforge.suite/1 document (write one with: kforge suite DIR --json > suite.json)");
  const std::string dir = suite.value("dir", "");
  json doc = base_document("suite", fmt::format("suite {}: {} problems", dir.empty() ? std::string("?") : dir,
                                                suite["rows"].size()));
  json rows = json::array();
  std::string device;
  int passed = 0;
  for (auto& r : suite["rows"]) {
    json row{{"problem", r.value("problem", "")},
             {"status", r.value("status", "")},
             {"message", r.value("message", "")},
             {"candidate_s", r.value("candidate_s", json())},
             {"reference_s", r.value("reference_s", json())},
             {"compile_s", r.value("compile_s", json())},
             {"speedup", nullptr},
             {"speedup_compile", nullptr},
             {"evaluation_id", r.value("evaluation_id", json())},
             {"run_id", r.value("run_id", json())},
             {"flops", 0},
             {"min_bytes", 0},
             {"dtype", ""},
             {"roofline_fraction", nullptr}};
    passed += row["status"] == "passed";
    if (r.contains("speedup_over") && r["speedup_over"].is_object()) {
      row["speedup"] = r["speedup_over"].value("reference", json());
      row["speedup_compile"] = r["speedup_over"].value("compile", json());
    }
    if (!dir.empty()) {
      const json p = problem_json(row["problem"], (fs::path(dir) / row["problem"].get<std::string>()).string());
      row["flops"] = p["flops"];
      row["min_bytes"] = p["min_bytes"];
      row["dtype"] = p["dtype"];
    }
    if (db && row["evaluation_id"].is_number())
      if (auto ev = db->get_evaluation(row["evaluation_id"].get<int64_t>())) {
        const json summary = parse_or(ev->summary_json, json::object());
        if (device.empty() && summary.contains("device") && summary["device"].is_string()) device = summary["device"];
        row["roofline_fraction"] = opt(number_at(summary, {"timing", "roofline", "candidate_fraction"}));
      }
    rows.push_back(row);
  }
  json fast_p = json::object();
  if (suite.contains("fast_p") && suite["fast_p"].is_object())
    for (auto& [baseline, levels] : suite["fast_p"].items()) {
      json b = json::object();
      for (auto& [k, v] : levels.items())
        if (k != "n" && k != "counts") b[k] = v;
      fast_p[baseline] = b;
    }
  doc["suite"] = {{"rows", rows}, {"fast_p", fast_p}, {"summary", suite.value("summary", json::object())}};
  json statuses = json::object(); // the failures chart counts problems per verdict
  for (auto& r : rows) statuses[r["status"].get<std::string>()] = statuses.value(r["status"].get<std::string>(), 0) + 1;
  doc["statuses"] = statuses;
  doc["machine"]["device"] = device;
  doc["machine"]["ceilings"] = ceilings_json(device);
  doc["reproduce"]["commands"] = {fmt::format("kforge suite {} --json", dir)};
  doc["summary"] = {{"evaluations", rows.size()}, {"passed", passed}, {"best_median_s", nullptr},
                    {"best_speedup", nullptr}, {"best_roofline_fraction", nullptr}, {"reference_median_s", nullptr},
                    {"tokens", 0}, {"cost_usd", 0.0}, {"wall_s", nullptr}};
  return doc;
}

std::string default_file_name(const json& doc) {
  const std::string kind = doc.value("kind", "");
  if (kind == "run") return fmt::format("report-run-{}.html", doc["run"]["id"].get<int64_t>());
  if (kind == "problem") return fmt::format("report-{}.html", file_stem(doc["problem"]["name"].get<std::string>()));
  return "report-suite.html";
}

// ------------------------------------------------------------------------------ the page

namespace {

/// A library the page inlines: kforge's installed copy (cmake --install), else Debian's.
std::string library(const std::string& rel, const std::string& package) {
  std::error_code ec;
  for (const auto& p : {data_path(fs::path("html") / "vendor" / rel), fs::path("/usr/share/javascript") / rel})
    if (fs::is_regular_file(p, ec)) return read_file(p);
  KFORGE_THROW(usage, "kforge report needs {} (/usr/share/javascript/{}): install the Debian package {} "
                      "(scripts/setup.sh does)", rel, rel, package);
}

/// The template with each marker replaced, in one pass over the template's own text (what is
/// put in is never searched again: a candidate's source may hold a marker).
std::string fill(const std::string& page, const std::vector<std::pair<std::string, std::string>>& with,
                 const fs::path& file) {
  std::vector<std::pair<std::size_t, std::size_t>> at; // (position, index in `with`)
  for (std::size_t i = 0; i < with.size(); ++i) {
    const auto pos = page.find(with[i].first);
    if (pos == std::string::npos) KFORGE_THROW(internal, "{}: the placeholder {} is missing", file.string(), with[i].first);
    at.emplace_back(pos, i);
  }
  std::sort(at.begin(), at.end());
  std::string out;
  std::size_t from = 0;
  for (auto [pos, i] : at) {
    out.append(page, from, pos - from);
    out += with[i].second;
    from = pos + with[i].first.size();
  }
  out.append(page, from, std::string::npos);
  return out;
}

/// JSON inside <script>: every '<' (only ever inside a string) as \u003c, so no text of a
/// candidate or a model can close the element or open an HTML comment in it.
std::string script_safe_json(const json& doc) {
  const std::string text = doc.dump(-1, ' ', false, json::error_handler_t::replace); // sources are any bytes
  std::string out;
  out.reserve(text.size() + 64);
  for (char c : text) {
    if (c == '<') out += "\\u003c";
    else out += c;
  }
  return out;
}

} // namespace

std::string render_html(const json& doc) {
  const fs::path dir = data_path("html");
  std::string page = read_file(dir / "report.html");
  const std::string css = read_file(dir / "report.css") + "\n" + library("highlight.js/styles/github.css", "libjs-highlight.js");
  // Libraries are inlined as they are (minified code may hold "</" only inside strings that
  // never reach the parser as a closing tag: "<\/script" is what breaks a page, checked below).
  std::string libs;
  for (auto [rel, package] : {std::pair{"chart.js/chart.min.js", "libjs-chart.js"}, std::pair{"d3/d3.min.js", "libjs-d3"},
                              std::pair{"highlight.js/highlight.min.js", "libjs-highlight.js"}}) {
    auto code = library(rel, package);
    if (code.find("</script") != std::string::npos) KFORGE_THROW(internal, "{}: holds </script; cannot be inlined", rel);
    libs += fmt::format("<script>/* {} (Debian {}) */\n{}\n</script>\n", rel, package, code);
  }
  return fill(page,
              {{"<!-- kforge:style -->", "<style>\n" + css + "\n</style>"},
               {"<!-- kforge:libs -->", libs},
               {"<!-- kforge:data -->",
                "<script type=\"application/json\" id=\"kforge-data\">" + script_safe_json(doc) + "</script>"},
               {"<!-- kforge:app -->", "<script>\n" + read_file(dir / "report.js") + "\n</script>"}},
              dir / "report.html");
}

} // namespace kforge::report
