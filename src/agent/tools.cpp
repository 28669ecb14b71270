#include "build/compiler.hpp"
#include "agent/tools.hpp"

#include "build/params.hpp"
#include "core/dtype.hpp"
#include "core/error.hpp"
#include "core/fs.hpp"
#include "core/hash.hpp"
#include "device/backend.hpp"
#include "device/calibration.hpp"
#include "problem/problem.hpp"
#include "profile/digest.hpp"
#include "report/html_report.hpp"
#include "report/run_report.hpp"
#include "search/record.hpp"
#include "search/strategy.hpp"
#include "store/store.hpp"
#include "worker/profile_run.hpp"

#include <fmt/format.h>

#include <atomic>
#include <charconv>
#include <memory>

#include <algorithm>
#include <cmath>

namespace kforge::agent {

using json = nlohmann::json;

// ---------------------------------------------------------------- registry, arguments

void tool_registry::add(tool t) {
  if (find(t.name)) KFORGE_THROW(internal, "tool '{}' registered twice", t.name);
  if (!t.input_schema.is_object() || t.input_schema.value("type", "") != "object")
    KFORGE_THROW(internal, "tool '{}': its inputSchema must be a JSON Schema of type object", t.name);
  if (!t.run) KFORGE_THROW(internal, "tool '{}' has no function", t.name);
  m_tools.push_back(std::move(t));
}

const tool* tool_registry::find(std::string_view name) const {
  for (const auto& t : m_tools)
    if (t.name == name) return &t;
  return nullptr;
}

namespace {

bool has_type(const json& v, const std::string& type) {
  if (type == "object") return v.is_object();
  if (type == "array") return v.is_array();
  if (type == "string") return v.is_string();
  if (type == "boolean") return v.is_boolean();
  if (type == "null") return v.is_null();
  if (type == "number") return v.is_number();
  if (type == "integer")
    return v.is_number_integer() || (v.is_number_float() && std::isfinite(v.get<double>()) &&
                                     v.get<double>() == std::floor(v.get<double>()));
  return true; // a type this checker does not know: let it through
}

std::string type_names(const json& type) {
  if (type.is_string()) return type.get<std::string>();
  std::string s;
  for (const auto& t : type) s += (s.empty() ? "" : " or ") + t.get<std::string>();
  return s;
}

std::string check_value(const json& schema, const json& v, const std::string& where) {
  if (schema.contains("type")) {
    const auto& type = schema["type"];
    bool ok = false;
    if (type.is_string()) ok = has_type(v, type.get<std::string>());
    else
      for (const auto& t : type) ok = ok || has_type(v, t.get<std::string>());
    if (!ok) return fmt::format("argument '{}' must be {}, not {}", where, type_names(type), v.dump().substr(0, 60));
  }
  if (schema.contains("enum")) {
    const auto& e = schema["enum"];
    if (std::find(e.begin(), e.end(), v) == e.end())
      return fmt::format("argument '{}' must be one of {}, not {}", where, e.dump(), v.dump().substr(0, 60));
  }
  if (v.is_number()) {
    if (schema.contains("minimum") && v.get<double>() < schema["minimum"].get<double>())
      return fmt::format("argument '{}' must be at least {}", where, schema["minimum"].dump());
    if (schema.contains("exclusiveMinimum") && v.get<double>() <= schema["exclusiveMinimum"].get<double>())
      return fmt::format("argument '{}' must be greater than {}", where, schema["exclusiveMinimum"].dump());
    if (schema.contains("maximum") && v.get<double>() > schema["maximum"].get<double>())
      return fmt::format("argument '{}' must be at most {}", where, schema["maximum"].dump());
  }
  if (v.is_object() && schema.contains("properties")) {
    const auto& props = schema["properties"];
    for (const auto& r : schema.value("required", json::array()))
      if (!v.contains(r.get<std::string>()))
        return fmt::format("argument '{}' is required", where.empty() ? r.get<std::string>() : where + "." + r.get<std::string>());
    for (auto it = v.begin(); it != v.end(); ++it) {
      const std::string name = where.empty() ? it.key() : where + "." + it.key();
      if (!props.contains(it.key())) {
        if (schema.value("additionalProperties", true) == false) {
          std::string known;
          for (auto p = props.begin(); p != props.end(); ++p) known += (known.empty() ? "" : ", ") + p.key();
          return fmt::format("unknown argument '{}'; the arguments are: {}", name, known);
        }
        continue;
      }
      if (auto e = check_value(props[it.key()], it.value(), name); !e.empty()) return e;
    }
  }
  return "";
}

} // namespace

std::string check_arguments(const json& schema, const json& args) {
  if (!args.is_object()) return "the arguments must be a JSON object";
  return check_value(schema, args, "");
}

tool_result call_tool(const tool& t, const json& args, const call_context& ctx) {
  if (auto e = check_arguments(t.input_schema, args); !e.empty())
    return {.structured = {{"error", e}}, .text = fmt::format("{}: {}. Fix the arguments and call again.", t.name, e),
            .is_error = true};
  try {
    return t.run(args, ctx);
  } catch (const kforge::error& e) {
    return {.structured = {{"error", e.what()}}, .text = fmt::format("{} could not run: {}", t.name, e.what()),
            .is_error = true};
  } catch (const std::exception& e) {
    return {.structured = {{"error", e.what()}},
            .text = fmt::format("{} failed with an internal error: {} (a kforge bug; the server is still up)", t.name,
                                e.what()),
            .is_error = true};
  }
}

// ---------------------------------------------------------------- shared pieces

namespace {

/// Seeds are 64-bit: a JavaScript client reads a JSON number above 2^53 rounded, and a
/// failure could no longer be reproduced from it. They travel as decimal strings.
json seeds_as_strings(json j) {
  if (j.is_object()) {
    for (auto it = j.begin(); it != j.end(); ++it)
      if (it.key() == "seed" && (it->is_number_unsigned() || it->is_number_integer())) *it = it->dump();
      else *it = seeds_as_strings(std::move(*it));
  } else if (j.is_array()) {
    for (auto& e : j) e = seeds_as_strings(std::move(e));
  }
  return j;
}

std::uint64_t parse_seed(const std::string& text) {
  std::uint64_t v = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || end != text.data() + text.size())
    KFORGE_THROW(usage, "seed '{}': give the decimal string an evaluation returned (at most 18446744073709551615)", text);
  return v;
}

/// The first `n` bytes of `s` or fewer, never splitting a UTF-8 sequence (compiler messages quote with ‘’).
std::string utf8_prefix(const std::string& s, std::size_t n) {
  if (s.size() <= n) return s;
  while (n > 0 && (static_cast<unsigned char>(s[n]) & 0xC0) == 0x80) --n;
  return s.substr(0, n);
}

std::string truncate(const std::string& s, std::size_t n) {
  return s.size() <= n ? s : utf8_prefix(s, n) + fmt::format("\n... ({} more bytes)", s.size() - utf8_prefix(s, n).size());
}

std::string one_line(std::string s, std::size_t n) {
  std::replace(s.begin(), s.end(), '\n', ' ');
  return s.size() <= n ? s : utf8_prefix(s, n - 3) + "...";
}

std::string seconds(std::optional<double> s) { return s && *s > 0 ? profile::format_duration(*s) : "-"; }

const json& schema_problem() {
  static const json j{{"type", "string"},
                      {"description", "Problem directory holding problem.toml (e.g. problems/cpu/gelu), absolute or "
                                      "relative to the server's working directory"}};
  return j;
}

json candidate_properties() {
  return {{"problem", schema_problem()},
          {"source", {{"type", "string"}, {"description", "The candidate's whole source text (give this or path)"}}},
          {"path", {{"type", "string"}, {"description", "A candidate source file (give this or source)"}}}};
}

problem::problem load_problem(const json& args) {
  const auto dir = args.at("problem").get<std::string>();
  if (!std::filesystem::exists(dir))
    KFORGE_THROW(usage, "{}: no such problem directory (working directory {}); give the folder holding problem.toml",
                 dir, std::filesystem::current_path().string());
  return problem::load(dir);
}

struct candidate_in {
  std::filesystem::path path; // what is built
  std::string source;
  std::string label;          // for tables
};

/// The candidate of a call: `source` written content-addressed to the cache, or `path`.
candidate_in candidate_of(const json& args, const problem::problem& p) {
  const bool has_source = args.contains("source"), has_path = args.contains("path");
  if (has_source == has_path)
    KFORGE_THROW(usage, "give exactly one of 'source' (the candidate's text) or 'path' (a file holding it)");
  candidate_in c;
  if (has_source) {
    c.source = args["source"].get<std::string>();
    if (c.source.find("kf_forward") == std::string::npos && c.source.find("kforge: launch") == std::string::npos)
      KFORGE_THROW(usage, "the source defines no kf_forward and no `// kforge: launch` line: give the whole candidate "
                          "file (describe_problem shows the seed to start from)");
    c.path = build::write_source(c.source, p.backend == problem::backend_kind::cuda ? "x.cu" : "x.cpp");
    c.label = "agent " + c.path.stem().string().substr(0, 8);
  } else {
    c.path = args["path"].get<std::string>();
    if (!std::filesystem::is_regular_file(c.path))
      KFORGE_THROW(usage, "{}: candidate file not found (working directory {}); give an absolute path, or pass the "
                          "text as 'source'", c.path.string(), std::filesystem::current_path().string());
    c.source = read_file(c.path);
    // no label: the record names it by its file (and its parameter values, when it declares some)
  }
  if (auto l = args.value("label", std::string()); !l.empty()) c.label = l;
  return c;
}

/// The problem's row id in the database (inserted on first use).
int64_t problem_row(store::store& db, const problem::problem& p) { return search::problem_id(db, p); }

/// A few lines a model reads about one kforge.eval/1 document (as recorded, with ids and kept).
std::string eval_text(const json& j, const problem::problem& p, std::optional<double> best_s) {
  const bool passed = j.value("status", "") == "passed";
  const auto device = j.value("device", std::string());
  std::string s = fmt::format("evaluation #{} of {} (candidate #{}{}): {}\n", j.value("evaluation_id", int64_t{0}),
                              p.name, j["candidate"].value("id", int64_t{0}), device.empty() ? "" : ", " + device,
                              passed ? "PASSED" : "FAILED: " + j.value("status", std::string("?")));
  if (!passed) {
    s += fmt::format("  {}\n", j.value("message", std::string()));
    if (j.value("status", "") == "build_failed" && j["failure"].is_object()) {
      const auto d = j["failure"].value("detail", json::object()).value("diagnostics", std::string());
      if (!d.empty()) s += "  compiler output:\n" + truncate(d, 4000) + "\n";
    }
    s += fmt::format("  {} of {} checks failed; kept: no. Fix what the message names and evaluate again.\n",
                     j.value("checks_failed", 0), j["checks"].size());
    return s;
  }
  s += fmt::format("  verified: {} checks over {} trials\n", j["checks"].size(), j["trials"].size());
  const auto& t = j["timing"];
  if (t.is_object() && t.contains("candidate")) {
    const auto& c = t["candidate"];
    s += fmt::format("  median {} ±{:.1f}% (n={})", seconds(c.value("median_s", 0.0)), 100 * c.value("ci_rel", 0.0),
                     c.value("samples", 0));
    if (t.contains("reference"))
      s += fmt::format("; reference {}", seconds(t["reference"].value("median_s", 0.0)));
    if (t.contains("speedup")) s += fmt::format("; speedup {:.2f}x", t["speedup"].get<double>());
    s += "\n";
    const json over = t.value("speedup_over", json::object());
    for (auto it = over.begin(); it != over.end(); ++it)
      if (it.key() != "reference") s += fmt::format("  vs baseline {}: {:.2f}x\n", it.key(), it.value().get<double>());
    if (t["roofline"].is_object())
      s += fmt::format("  roofline: {:.1f}% of the {}-bound floor {}\n",
                       100 * t["roofline"].value("candidate_fraction", 0.0), t["roofline"].value("bound", std::string("?")),
                       seconds(t["roofline"].value("floor_s", 0.0)));
    if (j.contains("predicted_s") && c.value("median_s", 0.0) > 0)
      s += fmt::format("  predicted {}: measured/predicted = {:.2f}\n", seconds(j["predicted_s"].get<double>()),
                       c.value("median_s", 0.0) / j["predicted_s"].get<double>());
  } else {
    s += "  not timed (time: false)\n";
  }
  for (const auto& r : j.value("review", json::array())) s += fmt::format("  REVIEW: {}\n", r.get<std::string>());
  if (j.value("kept", false)) s += fmt::format("  kept: yes (the fastest passing candidate of {} so far)\n", p.name);
  else s += fmt::format("  kept: no{}\n", best_s ? fmt::format(" (the best of {} so far: {})", p.name, seconds(best_s)) : "");
  return s;
}

json outcome_json(const search::outcome& o) {
  json j{{"candidate_id", o.candidate_id}, {"evaluation_id", o.evaluation_id}, {"status", o.status},
         {"message", o.message},           {"label", o.label},                 {"reused", o.reused},
         {"median_s", nullptr},            {"reference_median_s", nullptr},    {"speedup", nullptr},
         {"roofline_fraction", nullptr}};
  if (o.median_s) j["median_s"] = *o.median_s;
  if (o.reference_median_s) j["reference_median_s"] = *o.reference_median_s;
  if (o.speedup) j["speedup"] = *o.speedup;
  if (o.roofline_fraction) j["roofline_fraction"] = *o.roofline_fraction;
  return j;
}

json row_json(const store::experiment_row& r) {
  json j{{"evaluation_id", r.evaluation_id}, {"problem", r.problem},   {"candidate_id", r.candidate_id},
         {"label", r.label},                 {"origin", r.origin},     {"status", r.status},
         {"message", r.message},             {"hypothesis", r.hypothesis}, {"kept", r.kept},
         {"predicted_s", nullptr},           {"median_s", nullptr},    {"reference_median_s", nullptr},
         {"speedup", nullptr},               {"started_at", r.started_at}};
  if (r.predicted_s) j["predicted_s"] = *r.predicted_s;
  if (r.median_s) j["median_s"] = *r.median_s;
  if (r.reference_median_s) j["reference_median_s"] = *r.reference_median_s;
  if (r.median_s && r.reference_median_s && *r.median_s > 0) j["speedup"] = *r.reference_median_s / *r.median_s;
  return j;
}

/// The experiment log of a problem given as a directory (only that problem's rows: a CPU
/// and a CUDA problem may share a name) or as a name; every problem when empty.
std::vector<store::experiment_row> log_of(store::store& db, const std::string& problem, std::string* name) {
  if (problem.empty()) return db.experiment_log("", 0);
  if (!std::filesystem::exists(problem)) {
    if (problem.find('/') != std::string::npos)
      KFORGE_THROW(usage, "{}: no such problem directory (working directory {}); give a directory holding problem.toml "
                          "or a problem's name", problem, std::filesystem::current_path().string());
    *name = problem;
    return db.experiment_log(problem, 0);
  }
  const auto p = problem::load(problem);
  *name = p.name;
  const auto pid = problem_row(db, p);
  auto rows = db.experiment_log(p.name, 0);
  std::erase_if(rows, [&](const store::experiment_row& r) {
    auto c = db.get_candidate(r.candidate_id);
    return !c || c->problem_id != pid;
  });
  return rows;
}

void require_db(const std::filesystem::path& db_path) {
  if (!std::filesystem::exists(db_path))
    KFORGE_THROW(usage, "{}: no experiment database yet; evaluate a candidate first (or start the server with --db)",
                 std::filesystem::absolute(db_path).string());
}

// ---------------------------------------------------------------- the tools

tool describe_problem_tool() {
  tool t;
  t.name = "describe_problem";
  t.read_only = true;
  t.output_schema = {{"type", "object"}, {"properties", {{"name", {{"type", "string"}}}, {"backend", {{"type", "string"}}}}}};
  t.title = "Describe a kernel problem";
  t.description =
      "Read a kforge problem: what to compute, the tensors in ABI order (role, dtype, shape), the input "
      "distributions a candidate is verified on, the tolerance, the work counts for the roofline, and the text of "
      "the reference and of the seed candidate to start from. Call this before writing a candidate.";
  t.input_schema = {{"type", "object"},
                    {"properties", {{"problem", schema_problem()}}},
                    {"required", {"problem"}},
                    {"additionalProperties", false}};
  t.run = [](const json& args, const call_context& /*ctx*/) {
    const auto p = load_problem(args);
    json tensors = json::array();
    for (const auto& ts : p.tensors)
      tensors.push_back({{"name", ts.name},
                         {"role", ts.role == problem::tensor_role::output  ? "output"
                                  : ts.role == problem::tensor_role::param ? "param"
                                                                           : "input"},
                         {"dtype", dtype_name(ts.dtype)},
                         {"shape", ts.shape}});
    json cases = json::array();
    for (const auto& c : p.cases) {
      json inputs = json::object();
      for (const auto& [name, d] : c.inputs) inputs[name] = d.text;
      cases.push_back({{"name", c.name}, {"inputs", inputs}});
    }
    const auto& tol = p.tolerance;
    json tolerance{{"policy", tol.policy == problem::tolerance_policy::rtol ? "rtol" : "ratio"},
                   {"deterministic", tol.deterministic},
                   {"precision", tol.precision}};
    if (tol.policy == problem::tolerance_policy::rtol) {
      tolerance["rtol"] = tol.rtol;
      tolerance["atol"] = tol.atol;
    } else {
      tolerance["alpha"] = tol.alpha;
      tolerance["floor_ulps"] = tol.floor_ulps;
    }
    json baselines = json::array();
    for (const auto& b : p.baselines) baselines.push_back(b.name);
    const std::string ref_src = read_file(p.reference);
    json seed = nullptr;
    if (p.seed) seed = {{"path", p.seed->string()}, {"source", read_file(*p.seed)}};
    json j{{"name", p.name},
           {"description", p.description},
           {"dir", std::filesystem::absolute(p.dir).string()},
           {"backend", std::string(problem::backend_name(p.backend))},
           {"dtype", dtype_name(p.dtype)},
           {"tensors", tensors},
           {"cases", cases},
           {"tolerance", tolerance},
           {"work", {{"flops", p.work.flops}, {"min_bytes", p.work.min_bytes}}},
           {"eval", {{"trials_per_case", p.eval.trials_per_case}, {"time_budget_s", p.eval.time_budget_s},
                     {"timeout_s", p.eval.timeout_s}, {"hidden_case", p.eval.hidden_case}}},
           {"baselines", baselines},
           {"reference", {{"path", p.reference.string()}, {"source", ref_src}, {"pytorch", p.torch.has_value()}}},
           {"seed", seed}};
    if (p.torch) { // the tensors' torch_names map params onto the module's state
      for (std::size_t i = 0; i < p.tensors.size(); ++i)
        if (!p.tensors[i].torch_name.empty()) j["tensors"][i]["torch_name"] = p.tensors[i].torch_name;
    }

    std::string s = fmt::format("problem {} ({} backend, {}): {}\n", p.name, problem::backend_name(p.backend),
                                dtype_name(p.dtype), p.description);
    s += "tensors, in the order kf_forward receives them (inputs and params, then outputs):\n";
    for (const auto& tj : tensors)
      s += fmt::format("  {:<8} {:<6} {:<5} {}\n", tj["name"].get<std::string>(), tj["role"].get<std::string>(),
                       tj["dtype"].get<std::string>(), tj["shape"].dump());
    s += "verified on:";
    for (const auto& c : cases) s += fmt::format(" {} {};", c["name"].get<std::string>(), c["inputs"].dump());
    s += "\n";
    s += tol.policy == problem::tolerance_policy::rtol
             ? fmt::format("tolerance: |c - o| <= {:g} + {:g} |o| per element against the float64 oracle\n", tol.atol, tol.rtol)
             : fmt::format("tolerance: error <= {:g} x the reference's own error against the float64 oracle, floor {:g} "
                           "ulps{}\n", tol.alpha, tol.floor_ulps, tol.precision == "nominal" ? "" : " of " + tol.precision);
    if (tol.deterministic) s += "a repeat on the same inputs must be bitwise identical\n";
    if (p.work.flops > 0 || p.work.min_bytes > 0)
      s += fmt::format("work per call: {:.4g} flops, {:.4g} bytes at least (the roofline's inputs)\n", p.work.flops,
                       p.work.min_bytes);
    if (!p.baselines.empty()) s += fmt::format("baselines timed beside every candidate: {}\n", baselines.dump());
    s += "A candidate is one source file exporting `KF_EXPORT int kf_forward(const kf_args* a)` (#include "
         "<kforge/kernel.h>), as the seed does";
    s += p.backend == problem::backend_kind::cuda
             ? ", or a kernel-only .cu with `// kforge: launch` lines; `// kforge: param NAME = V in {...}` lines "
               "declare parameters the tune tool searches.\n"
             : "; `// kforge: param NAME = V in {...}` lines declare parameters the tune tool searches.\n";
    if (p.torch) {
      s += "The reference is the PyTorch module below (KernelBench format): kforge runs it at the problem's dtype "
           "and in float64 on your inputs; eager PyTorch is the time to beat, torch.compile is timed beside it. "
           "Params are the module's state:";
      for (auto& t : p.tensors)
        if (!t.torch_name.empty()) s += fmt::format(" {} = {};", t.name, t.torch_name);
      s += "\n";
    }
    s += fmt::format("\n--- reference ({}) ---\n{}\n", p.reference.filename().string(), ref_src);
    if (p.seed) s += fmt::format("--- seed ({}) ---\n{}\n", p.seed->filename().string(), seed["source"].get<std::string>());
    else if (p.torch) s += "(no seed: write the first kernel from the module)\n";
    else s += "(no seed: start from the reference)\n";
    return tool_result{.structured = j, .text = s};
  };
  return t;
}

tool evaluate_tool(const std::filesystem::path& db_path) {
  tool t;
  t.name = "evaluate";
  t.uses_device = true;
  t.output_schema = {{"type", "object"}, {"properties", {{"schema", {{"type", "string"}}}, {"status", {{"type", "string"}}}, {"message", {{"type", "string"}}}, {"kept", {{"type", "boolean"}}}, {"seed", {{"type", {"string", "null"}}}}}}};
  t.title = "Verify and time a candidate";
  t.description =
      "Build a candidate, verify it against the float64 oracle on fresh random inputs of every case (tolerance, "
      "NaN/Inf positions, guard bytes, inputs unchanged, determinism, ...), time it against the reference if it "
      "passed, and record it in the experiment log with your hypothesis and predicted time. A failing candidate is a "
      "normal answer: the text names the failing check, where it failed and the worst element. `kept` says whether it "
      "is now the problem's fastest passing candidate. Give the candidate as source text or as a file path.";
  auto props = candidate_properties();
  props["hypothesis"] = {{"type", "string"}, {"description", "What this candidate tests, for the experiment log"}};
  props["predicted_ms"] = {{"type", "number"}, {"exclusiveMinimum", 0}, {"description", "The median time you expect, in milliseconds"}};
  props["label"] = {{"type", "string"}, {"description", "A short name for tables (default: the file name)"}};
  props["parent_id"] = {{"type", "integer"}, {"description", "The candidate id this one derives from, for the lineage"}};
  props["time"] = {{"type", "boolean"}, {"description", "Time a passing candidate (default true); false verifies only"}};
  props["trials"] = {{"type", "integer"}, {"minimum", 1}, {"maximum", 100},
                     {"description", "Trials per input case (default: the problem's)"}};
  props["time_budget_s"] = {{"type", "number"}, {"minimum", 0.01}, {"maximum", 600},
                            {"description", "Seconds of timing per subject (default: the problem's)"}};
  props["seed"] = {{"type", "string"}, {"pattern", "^[0-9]{1,20}$"},
                   {"description", "Fix the inputs' seed to reproduce a failure: the `seed` string an evaluation returned"}};
  props["sanitize"] = {{"type", "boolean"},
                       {"description", "CUDA: also run compute-sanitizer after verification passes (slow)"}};
  t.input_schema = {{"type", "object"}, {"properties", props}, {"required", {"problem"}}, {"additionalProperties", false}};
  t.run = [db_path](const json& args, const call_context& ctx) {
    const auto p = load_problem(args);
    const auto c = candidate_of(args, p);
    store::store db(db_path);
    worker::evaluate_options eo;
    eo.time = args.value("time", true);
    eo.trials_per_case = args.value("trials", 0);
    eo.time_budget_s = args.value("time_budget_s", 0.0);
    eo.sanitize = args.value("sanitize", false);
    eo.reuse_torch_baselines = true; // an agent's loop, like a search: eager/compile timed once an hour
    if (args.contains("seed")) eo.seed = parse_seed(args["seed"].get<std::string>());
    eo.observer.on_phase = [&ctx](std::string_view phase, std::optional<double> seconds) {
      if (!seconds) ctx.report(std::string(phase));
    };
    search::provenance from{.origin = "agent", .label = c.label, .hypothesis = args.value("hypothesis", std::string())};
    if (args.contains("parent_id")) from.parent_id = args["parent_id"].get<int64_t>();
    if (args.contains("predicted_ms")) from.predicted_s = args["predicted_ms"].get<double>() / 1000.0;
    auto r = search::evaluate_and_record(db, p, c.path, from, eo);
    if (auto cand = db.get_candidate(r.candidate_id)) {
      // The same source judged before keeps its first label: say both rather than drop this one.
      r.json["candidate"]["label"] = args.value("label", cand->label);
      if (cand->label != r.json["candidate"]["label"]) r.json["candidate"]["recorded_label"] = cand->label;
      r.json["candidate"]["parent_id"] = cand->parent_id ? json(*cand->parent_id) : json();
    }
    const auto best = db.best_median(problem_row(db, p));
    return tool_result{.structured = seeds_as_strings(r.json), .text = eval_text(r.json, p, best)};
  };
  return t;
}

tool profile_tool(const std::filesystem::path& db_path) {
  tool t;
  t.name = "profile";
  t.uses_device = true;
  t.title = "Profile a candidate with Nsight Compute";
  t.description =
      "Run one call of a CUDA candidate under Nsight Compute and digest the counters: per kernel the duration, a "
      "bottleneck class (memory, compute, latency, launch) with the numbers behind it (DRAM throughput, occupancy "
      "and its limiter, top stall reasons, uncoalesced accesses, bank conflicts, spills), plus the SASS instruction "
      "mix. Use it to decide what to change next. CPU problems, or machines without ncu, answer with the reason.";
  t.input_schema = {{"type", "object"}, {"properties", candidate_properties()}, {"required", {"problem"}},
                    {"additionalProperties", false}};
  t.run = [db_path](const json& args, const call_context& ctx) {
    const auto p = load_problem(args);
    const auto c = candidate_of(args, p);
    store::store db(db_path);
    ctx.report("build and profile (ncu)");
    const auto label = c.label.empty() ? c.path.filename().string() : c.label;
    const auto cid = db.put_candidate(problem_row(db, p), c.source, "agent", label);
    auto run = worker::profile_candidate(p, c.path, {});
    json j = worker::profile_document(p, run);
    j["candidate"] = {{"id", cid}, {"path", std::filesystem::absolute(c.path).string()}, {"hash", sha256_hex(c.source)}};
    const std::string device = j["device"];
    std::string text = j["text"];
    if (!run.ok())
      text += p.backend == problem::backend_kind::cpu ? "\n(kforge profiles CUDA problems only; use evaluate's timing here)"
                                                      : "\n(timing from evaluate still works without counters)";
    j["text"] = text;
    db.put_profile({.candidate_id = cid, .device = device, .ok = run.ok(), .failure = run.failure,
                    .digest_json = j["digest"].dump(), .digest_text = text});
    return tool_result{.structured = j, .text = fmt::format("candidate #{} ({}):\n{}", cid, label, text)};
  };
  return t;
}

tool tune_tool(const std::filesystem::path& db_path) {
  tool t;
  t.name = "tune";
  t.uses_device = true;
  t.output_schema = {{"type", "object"}, {"properties", {{"run_id", {{"type", "integer"}}}, {"evaluations", {{"type", "integer"}}}, {"declares_params", {{"type", "boolean"}}}}}};
  t.title = "Tune a candidate's declared parameters";
  t.description =
      "Search the parameters a candidate declares with `// kforge: param NAME = DEFAULT in {V1, V2, ...}` lines "
      "(used as macros in the source): each instance is verified and timed like evaluate does, within a budget of "
      "evaluations, and the fastest passing instance is returned with its source. A source without declarations "
      "is evaluated once. Recorded as a kforge run (export can write its best out).";
  auto props = candidate_properties();
  props["budget"] = {{"type", "integer"}, {"minimum", 1}, {"maximum", 1000}, {"description", "Evaluations at most (default 16)"}};
  props["method"] = {{"type", "string"}, {"enum", {"grid", "random", "model", "auto"}},
                     {"description", "grid, random, model (a cost model picks the next point) or auto (grid when the "
                                     "space fits the budget; default)"}};
  props["label"] = {{"type", "string"}, {"description", "A short name for tables"}};
  props["trials"] = {{"type", "integer"}, {"minimum", 1}, {"maximum", 100},
                     {"description", "Trials per input case (default: the problem's)"}};
  props["time_budget_s"] = {{"type", "number"}, {"minimum", 0.01}, {"maximum", 600},
                            {"description", "Seconds of timing per subject and instance (default: the problem's)"}};
  t.input_schema = {{"type", "object"}, {"properties", props}, {"required", {"problem"}}, {"additionalProperties", false}};
  t.run = [db_path](const json& args, const call_context& ctx) {
    const auto p = load_problem(args);
    const auto c = candidate_of(args, p);
    const int budget = args.value("budget", 16);
    const auto method = args.value("method", std::string("auto"));
    store::store db(db_path);
    search::search_options so;
    so.strategy = "tune";
    so.max_evaluations = budget;
    so.patience = 0;
    so.tune_method = method;
    so.tune_budget = budget;
    so.trials = args.value("trials", 0);
    so.time_budget_s = args.value("time_budget_s", 0.0);
    auto judged = std::make_shared<std::atomic<int>>(0);
    search::session s(db, p, so, [&ctx, judged, budget](const json& e) {
      if (e.value("event", "") == "evaluation")
        ctx.report(fmt::format("evaluation {} of at most {}: {}", ++*judged, budget, e.value("status", std::string("?"))));
    });
    search::outcome o;
    try {
      const auto label = c.label.empty() ? c.path.filename().string() : c.label;
      o = search::tune_or_evaluate(s, {.source = c.source, .origin = "agent", .label = label, .step = "tune"}, budget,
                                   method);
    } catch (const std::exception& e) {
      s.fail(e.what());
      throw;
    }
    s.finish("done: tuned by the agent");
    const bool declares = build::declares_params(c.source);
    const auto best = s.best();
    const auto& chosen = best ? *best : o;
    json tried = json::array();
    std::string table;
    for (const auto& r : db.run_evaluations(s.run_id())) {
      std::optional<double> speedup;
      if (r.candidate_median_s && r.reference_median_s && *r.candidate_median_s > 0)
        speedup = *r.reference_median_s / *r.candidate_median_s;
      tried.push_back({{"evaluation_id", r.evaluation_id}, {"candidate_id", r.candidate_id}, {"label", r.candidate_label},
                       {"status", r.status}, {"params", json::parse(r.params_json, nullptr, false)},
                       {"median_s", r.candidate_median_s ? json(*r.candidate_median_s) : json()},
                       {"speedup", speedup ? json(*speedup) : json()}, {"reused", r.reused}});
      table += fmt::format("  #{:<5} {:<40} {:<14} {:>10} {}{}\n", r.evaluation_id, one_line(r.candidate_label, 40),
                           r.status, seconds(r.candidate_median_s),
                           speedup ? fmt::format("{:.2f}x", *speedup) : std::string(),
                           r.reused ? " (an earlier result of the same source)" : "");
    }
    json j{{"run_id", s.run_id()}, {"declares_params", declares}, {"evaluations", s.evaluations_used()},
           {"best", best ? outcome_json(*best) : json()}, {"result", outcome_json(o)}, {"tried", tried}};
    if (best) j["best"]["source"] = best->source;

    std::string text;
    if (o.status == "invalid_params") {
      text = fmt::format("the parameter declarations do not parse: {}\nFix the `// kforge: param` lines and call tune again.",
                         o.message);
    } else {
      text = fmt::format("run {}: {} over {} evaluation(s) of {}\n", s.run_id(),
                         declares ? "tuned" : "no `// kforge: param` lines, evaluated once", s.evaluations_used(), p.name);
      if (best)
        text += fmt::format("best: {} (candidate #{}, evaluation #{}): median {}{}\n", chosen.label, chosen.candidate_id,
                            chosen.evaluation_id, seconds(chosen.median_s),
                            chosen.speedup ? fmt::format(", speedup {:.2f}x", *chosen.speedup) : std::string());
      else
        text += fmt::format("no instance passed; the first failure: {} — {}\n", o.status, o.message);
      text += "tried:\n" + table;
      if (best && declares) text += fmt::format("--- best instance's source ---\n{}\n", best->source);
      text += fmt::format("export with run {} to write the best out.\n", s.run_id());
    }
    return tool_result{.structured = j, .text = text, .is_error = o.status == "invalid_params"};
  };
  return t;
}

tool history_tool(const std::filesystem::path& db_path) {
  tool t;
  t.name = "history";
  t.read_only = true;
  t.output_schema = {{"type", "object"}, {"properties", {{"rows", {{"type", "array"}}}}}};
  t.title = "The experiment log";
  t.description =
      "List recorded evaluations, oldest first: candidate, status, median time, speedup over the reference, whether "
      "it was kept (a new best), and the hypothesis and predicted time it was run with. Use it to see what has been "
      "tried before proposing the next experiment.";
  t.input_schema = {
      {"type", "object"},
      {"properties",
       {{"problem", {{"type", "string"}, {"description", "A problem directory or a problem name; default: every problem"}}},
        {"limit", {{"type", "integer"}, {"minimum", 1}, {"maximum", 10000}, {"description", "The newest N rows (default 30)"}}}}},
      {"additionalProperties", false}};
  t.run = [db_path](const json& args, const call_context& /*ctx*/) {
    require_db(db_path);
    store::store db(db_path);
    std::string name;
    auto rows = log_of(db, args.value("problem", std::string()), &name);
    const auto limit = static_cast<std::size_t>(args.value("limit", 30));
    const std::size_t total = rows.size();
    if (rows.size() > limit) rows.erase(rows.begin(), rows.end() - static_cast<std::ptrdiff_t>(limit));
    json out = json::array();
    std::string s = fmt::format("{} evaluation(s){}{}\n", total, name.empty() ? "" : " of " + name,
                                total > rows.size() ? fmt::format(", the newest {}", rows.size()) : "");
    if (!rows.empty())
      s += fmt::format("  {:<6} {:<10} {:<6} {:<28} {:<14} {:>10} {:>8} {:<4} {}\n", "eval", "problem", "cand", "label",
                       "status", "median", "speedup", "kept", "hypothesis (predicted)");
    for (const auto& r : rows) {
      auto j = row_json(r);
      s += fmt::format("  #{:<5} {:<10} #{:<5} {:<28} {:<14} {:>10} {:>8} {:<4} {}{}\n", r.evaluation_id,
                       one_line(r.problem, 10), r.candidate_id, one_line(r.label, 28), r.status, seconds(r.median_s),
                       j["speedup"].is_number() ? fmt::format("{:.2f}x", j["speedup"].get<double>()) : "-",
                       r.kept ? "yes" : "no", one_line(r.hypothesis, 60),
                       r.predicted_s ? " (" + seconds(r.predicted_s) + ")" : "");
      if (r.status != "passed" && !r.message.empty()) s += "         " + one_line(r.message, 160) + "\n";
      out.push_back(std::move(j));
    }
    return tool_result{.structured = {{"problem", name}, {"total", total}, {"rows", out}}, .text = s};
  };
  return t;
}

tool best_tool(const std::filesystem::path& db_path) {
  tool t;
  t.name = "best";
  t.read_only = true;
  t.title = "The fastest passing candidate";
  t.description =
      "The fastest passing evaluation of a problem recorded so far (lowest candidate median), with the candidate's "
      "source text, its speedup over the reference and the hypothesis it was run with.";
  t.input_schema = {
      {"type", "object"},
      {"properties", {{"problem", {{"type", "string"}, {"description", "A problem directory or a problem name"}}}}},
      {"required", {"problem"}},
      {"additionalProperties", false}};
  t.run = [db_path](const json& args, const call_context& /*ctx*/) {
    require_db(db_path);
    store::store db(db_path);
    std::string name;
    const auto rows = log_of(db, args.at("problem").get<std::string>(), &name);
    const store::experiment_row* best = nullptr;
    for (const auto& r : rows)
      if (r.status == "passed" && r.median_s && (!best || *r.median_s < *best->median_s)) best = &r;
    if (!best)
      return tool_result{.structured = {{"problem", name}, {"best", nullptr}},
                         .text = fmt::format("no passing, timed evaluation of {} yet ({} evaluation(s) recorded); "
                                             "evaluate a candidate first",
                                             name, rows.size())};
    auto j = row_json(*best);
    const auto cand = db.get_candidate(best->candidate_id);
    j["source"] = cand ? cand->source : std::string();
    std::string s = fmt::format("best of {}: evaluation #{}, candidate #{} ({}, {}): median {}", name, best->evaluation_id,
                                best->candidate_id, best->label, best->origin, seconds(best->median_s));
    if (j["speedup"].is_number()) s += fmt::format(", speedup {:.2f}x over the reference", j["speedup"].get<double>());
    s += "\n";
    if (!best->hypothesis.empty()) s += fmt::format("hypothesis: {}\n", best->hypothesis);
    s += fmt::format("--- source ---\n{}\n", j["source"].get<std::string>());
    return tool_result{.structured = {{"problem", name}, {"best", j}}, .text = s};
  };
  return t;
}

tool export_tool(const std::filesystem::path& db_path) {
  tool t;
  t.name = "export";
  t.output_schema = {{"type", "object"}, {"properties", {{"schema", {{"type", "string"}}}, {"dir", {{"type", "string"}}}, {"files", {{"type", "array"}}}}}};
  t.title = "Export a run's best candidate";
  t.description =
      "Write the best candidate of a kforge run (tune or kforge optimize) to a folder that builds on its own: the "
      "source, kforge/kernel.h, a README saying how it measured and how to build it, and its evaluation record.";
  t.input_schema = {
      {"type", "object"},
      {"properties",
       {{"run", {{"type", "integer"}, {"minimum", 1}, {"description", "The run's id (tune answers with its run_id)"}}},
        {"dir", {{"type", "string"}, {"description", "Folder to write (default ./kforge-export/run-N)"}}}}},
      {"required", {"run"}},
      {"additionalProperties", false}};
  t.run = [db_path](const json& args, const call_context& /*ctx*/) {
    const std::optional<int64_t> run_id = args.at("run").get<int64_t>();
    require_db(db_path);
    store::store db(db_path);
    const std::filesystem::path dir = args.contains("dir") ? std::filesystem::path(args["dir"].get<std::string>())
                                                           : std::filesystem::path("kforge-export") / ("run-" + std::to_string(*run_id));
    const auto r = report::export_best(db, *run_id, dir);
    json files = json::array();
    for (const auto& f : r.files) files.push_back(std::filesystem::absolute(f).string());
    json j{{"schema", "kforge.export/1"},       {"run", r.run_id},
           {"candidate_id", r.candidate_id},   {"evaluation_id", r.evaluation_id},
           {"dir", std::filesystem::absolute(r.dir).string()}, {"backend", r.cuda ? "cuda" : "cpu"},
           {"kernel_only", r.kernel_only},     {"files", files}};
    std::string s = fmt::format("exported run {}'s best (candidate #{}) to {}\n", r.run_id, r.candidate_id,
                                j["dir"].get<std::string>());
    for (const auto& f : files) s += "  " + f.get<std::string>() + "\n";
    return tool_result{.structured = j, .text = s};
  };
  return t;
}

tool report_tool(const std::filesystem::path& db_path) {
  tool t;
  t.name = "report";
  t.output_schema = {{"type", "object"}, {"properties", {{"path", {{"type", "string"}}}, {"kind", {{"type", "string"}}}, {"summary", {{"type", "object"}}}}}};
  t.title = "Write an HTML report";
  t.description =
      "Write a self-contained HTML report (opens with no network) of a kforge run or of every evaluation of a "
      "problem: progress over evaluations, time, tokens and cost; the lineage of candidates and ideas; a roofline "
      "chart; the best kernel's source and its diff against its parent; why candidates failed; LLM use. Returns "
      "the file's path and the key numbers. Give `run` or `problem`.";
  t.input_schema = {
      {"type", "object"},
      {"properties",
       {{"run", {{"type", "integer"}, {"minimum", 1}, {"description", "A run id (tune answers with its run id)"}}},
        {"problem", {{"type", "string"}, {"description", "A problem's name: a report of all its evaluations"}}},
        {"path", {{"type", "string"}, {"description", "The HTML file to write (default ./report-run-N.html or ./report-PROBLEM.html)"}}}}},
      {"additionalProperties", false}};
  t.run = [db_path](const json& args, const call_context& /*ctx*/) {
    if (args.contains("run") == args.contains("problem")) KFORGE_THROW(usage, "report: give `run` or `problem`, exactly one");
    require_db(db_path);
    store::store db(db_path);
    const json doc = args.contains("run") ? report::report_of_run(db, args["run"].get<int64_t>())
                                          : report::report_of_problem(db, args["problem"].get<std::string>());
    const auto path = std::filesystem::absolute(args.value("path", report::default_file_name(doc)));
    write_file_atomic(path, report::render_html(doc));
    json j{{"path", path.string()}, {"kind", doc["kind"]}, {"title", doc["title"]}, {"summary", doc["summary"]}};
    return tool_result{.structured = j, .text = fmt::format("wrote {} ({})\n{}", path.string(),
                                                            doc["title"].get<std::string>(), doc["summary"].dump())};
  };
  return t;
}

} // namespace

tool_registry make_kforge_tools(const std::filesystem::path& db_path) {
  tool_registry r;
  r.add(describe_problem_tool());
  r.add(evaluate_tool(db_path));
  r.add(profile_tool(db_path));
  r.add(tune_tool(db_path));
  r.add(history_tool(db_path));
  r.add(best_tool(db_path));
  r.add(export_tool(db_path));
  r.add(report_tool(db_path));
  return r;
}

} // namespace kforge::agent
