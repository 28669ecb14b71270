#include "problem/problem.hpp"

#include "core/dtype.hpp"
#include "core/error.hpp"
#include "core/text.hpp"

#include <nlohmann/json.hpp>
#include <toml++/toml.h>

#include <algorithm>
#include <climits>
#include <cmath>
#include <fstream>
#include <initializer_list>
#include <sstream>
#include <string_view>
#include <system_error>

namespace kforge::problem {

int64_t tensor_spec::numel() const {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

std::vector<const tensor_spec*> problem::inputs() const {
  std::vector<const tensor_spec*> out;
  for (const auto& t : tensors)
    if (t.role != tensor_role::output) out.push_back(&t);
  return out;
}

std::vector<const tensor_spec*> problem::outputs() const {
  std::vector<const tensor_spec*> out;
  for (const auto& t : tensors)
    if (t.role == tensor_role::output) out.push_back(&t);
  return out;
}

std::string_view backend_name(backend_kind b) {
  switch (b) {
  case backend_kind::cpu: return "cpu";
  case backend_kind::cuda: return "cuda";
  }
  return "?";
}

namespace {

namespace fs = std::filesystem;
using keys = std::initializer_list<std::string_view>;

/// @return the candidate closest to `word` within edit distance 2, or "" when none is.
std::string closest(std::string_view word, const std::vector<std::string>& candidates) {
  std::string best;
  std::size_t best_d = 3;
  for (const auto& c : candidates) {
    const std::size_t d = edit_distance(word, c);
    if (d < best_d && d < std::max(word.size(), c.size())) best_d = d, best = c;
  }
  return best;
}

std::string join(const std::vector<std::string>& v) {
  std::string out;
  for (const auto& s : v) out += (out.empty() ? "" : ", ") + s;
  return out;
}

std::string sub(const std::string& prefix, std::string_view key) {
  return prefix.empty() ? std::string(key) : prefix + "." + std::string(key);
}

bool valid_problem_name(std::string_view s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '.' ||
           c == '-';
  });
}

bool valid_identifier(std::string_view s) {
  if (s.empty()) return false;
  for (std::size_t i = 0; i < s.size(); ++i) {
    const char c = s[i];
    const bool alpha = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
    if (!alpha && !(i > 0 && c >= '0' && c <= '9')) return false;
  }
  return true;
}

const char* type_name(const toml::node& n) {
  switch (n.type()) {
  case toml::node_type::table: return "a table";
  case toml::node_type::array: return "an array";
  case toml::node_type::string: return "a string";
  case toml::node_type::integer: return "an integer";
  case toml::node_type::floating_point: return "a float";
  case toml::node_type::boolean: return "a boolean";
  case toml::node_type::date: return "a date";
  case toml::node_type::time: return "a time";
  case toml::node_type::date_time: return "a date-time";
  default: return "nothing";
  }
}

bool is_integer_tensor(const tensor_spec& t) { return !t.follows_real && !dtype_is_real(t.dtype); }

// Reads and checks one problem.toml; every failure names the file, the key and the reason.
class loader {
public:
  explicit loader(std::string file, std::string dir_display)
      : m_file(std::move(file)), m_dir(std::move(dir_display)) {}

  [[noreturn]] void fail(const toml::source_region* where, const std::string& key, std::string_view reason) const {
    if (where && where->begin.line > 0)
      KFORGE_THROW(problem, "{}:{}:{}: key '{}': {}", m_file, where->begin.line, where->begin.column, key, reason);
    KFORGE_THROW(problem, "{}: key '{}': {}", m_file, key, reason);
  }
  [[noreturn]] void fail(const toml::node& n, const std::string& key, std::string_view reason) const {
    fail(&n.source(), key, reason);
  }

  /// Rejects keys of `t` not in `known`, suggesting the nearest known one.
  void check_keys(const toml::table& t, const std::string& prefix, keys known) const {
    for (auto&& [k, v] : t) {
      if (std::find(known.begin(), known.end(), k.str()) != known.end()) continue;
      std::vector<std::string> cand(known.begin(), known.end());
      const std::string best = closest(k.str(), cand);
      const std::string reason = best.empty() ? "unknown key (known keys: " + join(cand) + ")"
                                              : "unknown key; did you mean '" + best + "'?";
      fail(k.source().begin.line > 0 ? &k.source() : &v.source(), sub(prefix, k.str()), reason);
    }
  }

  // Typed getters: nullptr/nullopt when absent (or an error when `required`).
  const toml::node* get(const toml::table& t, const std::string& prefix, std::string_view key, bool required) const {
    const toml::node* n = t.get(key);
    if (!n && required) fail(&t.source(), sub(prefix, key), "required key is missing");
    return n;
  }

  std::optional<std::string> get_string(const toml::table& t, const std::string& prefix, std::string_view key,
                                        bool required = false) const {
    const toml::node* n = get(t, prefix, key, required);
    if (!n) return std::nullopt;
    if (!n->is_string()) fail(*n, sub(prefix, key), fmt::format("must be a string, got {}", type_name(*n)));
    return n->as_string()->get();
  }

  std::optional<double> get_number(const toml::table& t, const std::string& prefix, std::string_view key) const {
    const toml::node* n = get(t, prefix, key, false);
    if (!n) return std::nullopt;
    double v = 0;
    if (n->is_integer()) v = static_cast<double>(n->as_integer()->get());
    else if (n->is_floating_point()) v = n->as_floating_point()->get();
    else fail(*n, sub(prefix, key), fmt::format("must be a number, got {}", type_name(*n)));
    if (!std::isfinite(v)) fail(*n, sub(prefix, key), "must be a finite number");
    return v;
  }

  // A number with a lower bound: strict (> lo) or not (>= lo).
  void read_number(const toml::table& t, const std::string& prefix, std::string_view key, double& out, double lo,
                   bool strict) const {
    const auto v = get_number(t, prefix, key);
    if (!v) return;
    if (strict ? !(*v > lo) : !(*v >= lo))
      fail(*t.get(key), sub(prefix, key), fmt::format("must be {} {}, got {}", strict ? ">" : ">=", lo, *v));
    out = *v;
  }

  void read_int(const toml::table& t, const std::string& prefix, std::string_view key, int& out, int lo,
                std::string_view lo_name = {}) const {
    const toml::node* n = get(t, prefix, key, false);
    if (!n) return;
    if (!n->is_integer()) fail(*n, sub(prefix, key), fmt::format("must be an integer, got {}", type_name(*n)));
    const int64_t v = n->as_integer()->get();
    if (v < lo)
      fail(*n, sub(prefix, key),
           lo_name.empty() ? fmt::format("must be >= {}, got {}", lo, v)
                           : fmt::format("must be >= {} ({}), got {}", lo_name, lo, v));
    if (v > INT_MAX) fail(*n, sub(prefix, key), fmt::format("must be <= {}, got {}", INT_MAX, v));
    out = static_cast<int>(v);
  }

  void read_bool(const toml::table& t, const std::string& prefix, std::string_view key, bool& out) const {
    const toml::node* n = get(t, prefix, key, false);
    if (!n) return;
    if (!n->is_boolean()) fail(*n, sub(prefix, key), fmt::format("must be a boolean, got {}", type_name(*n)));
    out = n->as_boolean()->get();
  }

  const toml::table* get_table(const toml::table& t, std::string_view key) const {
    const toml::node* n = t.get(key);
    if (!n) return nullptr;
    if (!n->is_table())
      fail(*n, std::string(key), fmt::format("must be a table ([{}]), got {}", key, type_name(*n)));
    return n->as_table();
  }

  const toml::array* get_tables(const toml::table& t, std::string_view key) const {
    const toml::node* n = t.get(key);
    if (!n) return nullptr;
    if (!n->is_array() || !n->as_array()->is_array_of_tables())
      fail(*n, std::string(key),
           n->is_array() && n->as_array()->empty()
               ? fmt::format("must contain at least one table ([[{}]])", key)
               : fmt::format("must be an array of tables ([[{}]]), got {}", key, type_name(*n)));
    return n->as_array();
  }

  // --- sections ------------------------------------------------------------------------

  // A shape: 1 to 8 positive integer dimensions whose product fits int64.
  std::vector<int64_t> read_shape(const toml::node& shape, const std::string& skey) const {
    if (!shape.is_array())
      fail(shape, skey, fmt::format("must be an array of positive integers, got {}", type_name(shape)));
    const toml::array& dims = *shape.as_array();
    if (dims.empty()) fail(shape, skey, "must have at least 1 dimension (a scalar is shape = [1])");
    if (dims.size() > 8) fail(shape, skey, fmt::format("has {} dimensions; at most 8 are supported", dims.size()));
    std::vector<int64_t> out;
    int64_t numel = 1;
    for (std::size_t i = 0; i < dims.size(); ++i) {
      const toml::node& d = *dims.get(i);
      if (!d.is_integer())
        fail(d, skey, fmt::format("must be an array of positive integers; element {} is {}", i, type_name(d)));
      const int64_t v = d.as_integer()->get();
      if (v <= 0) fail(d, skey, fmt::format("must be an array of positive integers; element {} is {}", i, v));
      if (numel > INT64_MAX / v) fail(shape, skey, "has too many elements (the product overflows int64)");
      numel *= v;
      out.push_back(v);
    }
    return out;
  }

  // [sanitize]: shapes for every tensor or none (a partial set could not be consistent with
  // the shapes the candidate derives from the others), the tools, a watchdog.
  sanitize_spec read_sanitize(const toml::table& st, const std::vector<tensor_spec>& tensors) const {
    sanitize_spec s;
    std::vector<std::string> names;
    for (const auto& t : tensors) names.push_back(t.name);
    for (auto&& [k, v] : st) {
      const std::string key = sub("sanitize", k.str());
      if (k.str() == "tools") {
        if (!v.is_array()) fail(v, key, fmt::format("must be an array of tool names, got {}", type_name(v)));
        const std::vector<std::string> known(std::begin(sanitizer_tools), std::end(sanitizer_tools));
        s.tools.clear();
        for (auto&& e : *v.as_array()) {
          if (!e.is_string() || std::find(known.begin(), known.end(), e.as_string()->get()) == known.end())
            fail(e, key, fmt::format("unknown tool {} (known: {})", e.is_string() ? "'" + e.as_string()->get() + "'" : type_name(e),
                                     join(known)));
          s.tools.push_back(e.as_string()->get());
        }
        if (s.tools.empty()) fail(v, key, "must name at least one tool (leave [sanitize] tools out for all four)");
      } else if (k.str() == "timeout_s") {
        read_number(st, "sanitize", "timeout_s", s.timeout_s, 0, true);
      } else if (std::find(names.begin(), names.end(), k.str()) != names.end()) {
        s.shapes[std::string(k.str())] = read_shape(v, key);
      } else {
        const std::string best = closest(k.str(), names);
        fail(&k.source(), key,
             fmt::format("names no tensor (tensors: {}; other keys: tools, timeout_s){}", join(names),
                         best.empty() ? "" : "; did you mean '" + best + "'?"));
      }
    }
    if (!s.shapes.empty())
      for (const auto& n : names)
        if (!s.shapes.count(n))
          fail(&st.source(), sub("sanitize", n),
               fmt::format("missing: [sanitize] gives shapes for some tensors, so it must give one for every tensor ({})",
                           join(names)));
    return s;
  }

  tensor_spec read_tensor(const toml::table& t, const std::string& prefix, bool output, kf_dtype real) const {
    if (output) check_keys(t, prefix, {"name", "shape", "dtype"});
    else check_keys(t, prefix, {"name", "shape", "dtype", "param", "torch_name"});
    tensor_spec s;
    s.name = *get_string(t, prefix, "name", true);
    if (!valid_identifier(s.name))
      fail(*t.get("name"), sub(prefix, "name"),
           fmt::format("invalid tensor name '{}': must match [A-Za-z_][A-Za-z0-9_]*", s.name));
    if (s.name == "name")
      fail(*t.get("name"), sub(prefix, "name"), "the tensor name 'name' is reserved (it names a case in [[cases]])");

    s.shape = read_shape(*get(t, prefix, "shape", true), sub(prefix, "shape"));

    s.role = output ? tensor_role::output : tensor_role::input;
    s.dtype = real;
    s.follows_real = true;
    if (auto dt = get_string(t, prefix, "dtype"); dt && *dt != "real") {
      const auto parsed = dtype_from_name(*dt);
      if (!parsed) {
        std::vector<std::string> names{"real", "f16", "bf16", "f32", "f64", "i8", "i32", "i64", "u8", "bool"};
        const std::string best = closest(*dt, names);
        fail(*t.get("dtype"), sub(prefix, "dtype"),
             fmt::format("unknown dtype '{}' (known: {}){}", *dt, join(names),
                         best.empty() ? "" : "; did you mean '" + best + "'?"));
      }
      s.dtype = *parsed;
      s.follows_real = false;
    }
    if (!output) {
      bool param = false;
      read_bool(t, prefix, "param", param);
      if (param) s.role = tensor_role::param;
      if (auto tn = get_string(t, prefix, "torch_name")) {
        if (!param) fail(*t.get("torch_name"), sub(prefix, "torch_name"), "only a param (param = true) names module state");
        s.torch_name = *tn;
      }
    }
    return s;
  }

  // Checks a distribution against the tensor it fills.
  void check_fits(const distribution& d, const tensor_spec& t, const toml::node& where, const std::string& key) const {
    if (!is_integer_tensor(t)) return;
    if (d.kind != distribution_kind::int_range)
      fail(where, key,
           fmt::format("tensor '{}' has integer dtype {}; only int_range(lo, hi) applies, got '{}'", t.name,
                       dtype_name(t.dtype), d.text));
    double lo = 0, hi = 0;
    switch (t.dtype) {
    case KF_I8: lo = -128, hi = 127; break;
    case KF_U8: lo = 0, hi = 255; break;
    case KF_I32: lo = INT32_MIN, hi = INT32_MAX; break;
    default: return; // i64 holds every int_range; bool stores nonzero as true
    }
    if (d.a < lo || d.b > hi)
      fail(where, key,
           fmt::format("'{}' does not fit tensor '{}' of dtype {} (range {} to {})", d.text, t.name,
                       dtype_name(t.dtype), lo, hi));
  }

  std::vector<case_spec> read_cases(const toml::table& root, const std::vector<tensor_spec>& tensors) const {
    std::vector<case_spec> cases;
    std::vector<std::string> input_names, candidates{"name"};
    for (const auto& t : tensors)
      if (t.role != tensor_role::output) input_names.push_back(t.name);
    candidates.insert(candidates.end(), input_names.begin(), input_names.end());

    if (const toml::array* arr = get_tables(root, "cases")) {
      for (std::size_t ci = 0; ci < arr->size(); ++ci) {
        const toml::table& ct = *arr->get(ci)->as_table();
        const std::string prefix = fmt::format("cases[{}]", ci);
        case_spec c;
        for (auto&& [k, v] : ct) {
          if (k.str() == "name") continue;
          const std::string key = sub(prefix, k.str());
          const std::string_view kname = k.str();
          const auto it =
              std::find_if(tensors.begin(), tensors.end(), [&](const tensor_spec& t) { return t.name == kname; });
          if (it == tensors.end()) {
            const std::string best = closest(k.str(), candidates);
            fail(&k.source(), key,
                 fmt::format("names no input tensor (inputs: {}){}", join(input_names),
                             best.empty() ? "" : "; did you mean '" + best + "'?"));
          }
          if (it->role == tensor_role::output)
            fail(&k.source(), key,
                 fmt::format("'{}' is an output; only inputs and params take a distribution", it->name));
          if (!v.is_string())
            fail(v, key, fmt::format("must be a distribution string such as \"normal(0, 1)\", got {}", type_name(v)));
          distribution d;
          try {
            d = parse_distribution(v.as_string()->get());
          } catch (const kforge::error& e) {
            fail(v, key, e.what());
          }
          check_fits(d, *it, v, key);
          c.inputs.emplace(it->name, std::move(d));
        }
        // The name last, so that a misspelt 'name' is reported as the unknown key it is.
        c.name = *get_string(ct, prefix, "name", true);
        if (c.name.empty()) fail(*ct.get("name"), sub(prefix, "name"), "must not be empty");
        for (std::size_t j = 0; j < cases.size(); ++j)
          if (cases[j].name == c.name)
            fail(*ct.get("name"), sub(prefix, "name"),
                 fmt::format("duplicate case name '{}' (also cases[{}])", c.name, j));
        cases.push_back(std::move(c));
      }
    } else {
      cases.push_back(case_spec{"default", {}});
    }

    // Complete every case: first "default" (built-in generators), then the rest from it.
    const auto builtin = [](const tensor_spec& t) {
      return parse_distribution(is_integer_tensor(t) ? "int_range(0, 9)" : "normal(0, 1)");
    };
    const auto def = std::find_if(cases.begin(), cases.end(), [](const case_spec& c) { return c.name == "default"; });
    if (def != cases.end())
      for (const auto& t : tensors)
        if (t.role != tensor_role::output && !def->inputs.count(t.name)) def->inputs.emplace(t.name, builtin(t));
    for (auto& c : cases)
      for (const auto& t : tensors)
        if (t.role != tensor_role::output && !c.inputs.count(t.name))
          c.inputs.emplace(t.name, def != cases.end() ? def->inputs.at(t.name) : builtin(t));
    return cases;
  }

  fs::path resolve_file(const fs::path& dir, const std::string& rel, const toml::node* where,
                        const std::string& key) const {
    const fs::path p = dir / rel;
    std::error_code ec;
    if (!fs::is_regular_file(p, ec)) fail(where ? &where->source() : nullptr, key,
                                          fmt::format("file '{}' not found in {}", rel, m_dir));
    return p.lexically_normal();
  }

  problem read(const toml::table& root, const fs::path& dir) const {
    check_keys(root, "",
               {"name", "description", "backend", "dtype", "reference", "seed", "inputs", "outputs", "cases", "work",
                "tolerance", "eval", "baselines", "sanitize", "torch"});
    problem p;
    p.name = *get_string(root, "", "name", true);
    if (!valid_problem_name(p.name))
      fail(*root.get("name"), "name", fmt::format("invalid name '{}': must match [A-Za-z0-9_.-]+", p.name));
    p.description = get_string(root, "", "description").value_or("");

    const std::string backend = *get_string(root, "", "backend", true);
    if (backend == "cpu") p.backend = backend_kind::cpu;
    else if (backend == "cuda") p.backend = backend_kind::cuda;
    else fail(*root.get("backend"), "backend", fmt::format("must be \"cpu\" or \"cuda\", got '{}'", backend));

    if (auto dt = get_string(root, "", "dtype")) {
      const auto parsed = dtype_from_name(*dt);
      if (!parsed || !dtype_is_real(*parsed))
        fail(*root.get("dtype"), "dtype",
             fmt::format("{} '{}': the problem dtype must be a real type (f16, bf16, f32, f64)",
                         parsed ? "not a real dtype" : "unknown dtype", *dt));
      p.dtype = *parsed;
    }

    // Tensors: inputs and params in file order, then outputs.
    std::vector<std::string> where; // dotted key of each tensor, for duplicate messages
    for (const bool output : {false, true}) {
      const char* section = output ? "outputs" : "inputs";
      const toml::array* arr = get_tables(root, section);
      if (!arr)
        fail(nullptr, section, fmt::format("required key is missing: at least one [[{}]] table is needed", section));
      for (std::size_t i = 0; i < arr->size(); ++i) {
        const std::string prefix = fmt::format("{}[{}]", section, i);
        const toml::table& tt = *arr->get(i)->as_table();
        tensor_spec t = read_tensor(tt, prefix, output, p.dtype);
        for (std::size_t j = 0; j < p.tensors.size(); ++j)
          if (p.tensors[j].name == t.name)
            fail(*tt.get("name"), sub(prefix, "name"),
                 fmt::format("duplicate tensor name '{}' (also {})", t.name, where[j]));
        p.tensors.push_back(std::move(t));
        where.push_back(prefix);
      }
    }

    p.cases = read_cases(root, p.tensors);

    if (const toml::table* w = get_table(root, "work")) {
      check_keys(*w, "work", {"flops", "min_bytes"});
      read_number(*w, "work", "flops", p.work.flops, 0, false);
      read_number(*w, "work", "min_bytes", p.work.min_bytes, 0, false);
    }

    if (const toml::table* t = get_table(root, "tolerance")) {
      const std::string pre = "tolerance";
      check_keys(*t, pre, {"policy", "alpha", "floor_ulps", "rtol", "atol", "deterministic", "precision"});
      if (auto pol = get_string(*t, pre, "policy")) {
        if (*pol == "ratio") p.tolerance.policy = tolerance_policy::ratio;
        else if (*pol == "rtol") p.tolerance.policy = tolerance_policy::rtol;
        else fail(*t->get("policy"), "tolerance.policy", fmt::format("must be \"ratio\" or \"rtol\", got '{}'", *pol));
      }
      read_number(*t, pre, "alpha", p.tolerance.alpha, 0, true);
      read_number(*t, pre, "floor_ulps", p.tolerance.floor_ulps, 0, false);
      read_number(*t, pre, "rtol", p.tolerance.rtol, 0, false);
      read_number(*t, pre, "atol", p.tolerance.atol, 0, false);
      read_bool(*t, pre, "deterministic", p.tolerance.deterministic);
      if (auto prec = get_string(*t, pre, "precision")) {
        if (*prec != "nominal" && *prec != "tf32" && *prec != "bf16" && *prec != "f16")
          fail(*t->get("precision"), "tolerance.precision",
               fmt::format("must be \"nominal\", \"tf32\", \"bf16\" or \"f16\", got '{}'", *prec));
        if (*prec != "nominal" && p.dtype != KF_F32)
          fail(*t->get("precision"), "tolerance.precision",
               fmt::format("a lower precision is an opt-in for f32 problems; this one is {}", dtype_name(p.dtype)));
        p.tolerance.precision = *prec;
      }
      if (p.tolerance.policy == tolerance_policy::rtol && !(p.tolerance.rtol > 0 || p.tolerance.atol > 0))
        fail(*t->get("policy"), "tolerance.policy", "policy \"rtol\" needs rtol > 0 or atol > 0");
    }

    if (const toml::table* e = get_table(root, "eval")) {
      const std::string pre = "eval";
      check_keys(*e, pre,
                 {"trials_per_case", "time_budget_s", "min_samples", "max_samples", "target_rel_ci", "timeout_s",
                  "hidden_case", "review_speedup", "memory_limit_mb", "max_threads"});
      read_int(*e, pre, "trials_per_case", p.eval.trials_per_case, 1);
      read_number(*e, pre, "time_budget_s", p.eval.time_budget_s, 0, true);
      read_int(*e, pre, "min_samples", p.eval.min_samples, 1);
      if (e->get("max_samples")) read_int(*e, pre, "max_samples", p.eval.max_samples, p.eval.min_samples, "min_samples");
      else if (p.eval.max_samples < p.eval.min_samples)
        fail(*e->get("min_samples"), "eval.min_samples",
             fmt::format("must be <= max_samples ({}), got {}", p.eval.max_samples, p.eval.min_samples));
      read_number(*e, pre, "target_rel_ci", p.eval.target_rel_ci, 0, true);
      read_number(*e, pre, "timeout_s", p.eval.timeout_s, 0, true);
      read_bool(*e, pre, "hidden_case", p.eval.hidden_case);
      read_number(*e, pre, "review_speedup", p.eval.review_speedup, 1, false);
      read_number(*e, pre, "memory_limit_mb", p.eval.memory_limit_mb, 0, false);
      read_int(*e, pre, "max_threads", p.eval.max_threads, 0);
    }

    const bool cuda = p.backend == backend_kind::cuda;
    if (const toml::table* tt = get_table(root, "torch")) {
      check_keys(*tt, "torch", {"module", "init_inputs", "compile", "scalars"});
      if (root.get("reference"))
        fail(*root.get("reference"), "reference", "a [torch] problem's reference is its module; remove 'reference'");
      torch_spec ts;
      const std::string mod = *get_string(*tt, "torch", "module", true);
      ts.module = resolve_file(dir, mod, tt->get("module"), "torch.module");
      if (auto init = get_string(*tt, "torch", "init_inputs")) {
        const auto j = nlohmann::json::parse(*init, nullptr, false);
        if (j.is_discarded() || !j.is_array())
          fail(*tt->get("init_inputs"), "torch.init_inputs",
               fmt::format("must be a JSON array (the arguments of Model(...)), got '{}'", *init));
        ts.init_inputs = j.dump();
      }
      read_bool(*tt, "torch", "compile", ts.compile);
      if (const toml::node* sc = tt->get("scalars")) {
        const toml::array* arr = sc->as_array();
        if (!arr) fail(*sc, "torch.scalars", "must be an array of input names");
        for (auto&& e : *arr) {
          const auto* name = e.as_string();
          if (!name) fail(e, "torch.scalars", "must be an array of input names");
          const auto it = std::find_if(p.tensors.begin(), p.tensors.end(),
                                       [&](const tensor_spec& t) { return t.name == name->get(); });
          if (it == p.tensors.end() || it->role != tensor_role::input || it->numel() != 1)
            fail(e, "torch.scalars",
                 fmt::format("'{}' is not a one-element input (forward() takes it as a number)", name->get()));
          ts.scalars.push_back(name->get());
        }
      }
      for (auto& t : p.tensors)
        if (t.role == tensor_role::param && t.torch_name.empty())
          fail(*tt, "torch", fmt::format("param '{}' needs torch_name: the module state it fills", t.name));
      p.reference = ts.module;
      p.torch = std::move(ts);
    } else {
      const std::string ref = get_string(root, "", "reference").value_or(cuda ? "reference.cu" : "reference.cpp");
      p.reference = resolve_file(dir, ref, root.get("reference"), "reference");
    }
    if (auto seed = get_string(root, "", "seed")) {
      p.seed = resolve_file(dir, *seed, root.get("seed"), "seed");
    } else {
      std::error_code ec;
      const fs::path s = dir / (cuda ? "seed.cu" : "seed.cpp");
      if (fs::is_regular_file(s, ec)) p.seed = s.lexically_normal();
    }

    // Baselines: vendor-library (or any other) implementations timed beside the candidate.
    if (const toml::array* arr = get_tables(root, "baselines")) {
      for (std::size_t i = 0; i < arr->size(); ++i) {
        const std::string prefix = fmt::format("baselines[{}]", i);
        const toml::table& bt = *arr->get(i)->as_table();
        check_keys(bt, prefix, {"name", "source"});
        baseline_spec b;
        b.name = *get_string(bt, prefix, "name", true);
        if (!valid_identifier(b.name) || b.name == "candidate" || b.name == "reference")
          fail(*bt.get("name"), sub(prefix, "name"),
               fmt::format("invalid baseline name '{}': an identifier other than candidate and reference", b.name));
        for (auto& o : p.baselines)
          if (o.name == b.name) fail(*bt.get("name"), sub(prefix, "name"), fmt::format("duplicate baseline '{}'", b.name));
        const std::string src = *get_string(bt, prefix, "source", true);
        b.source = resolve_file(dir, src, bt.get("source"), sub(prefix, "source"));
        p.baselines.push_back(std::move(b));
      }
    }
    if (const toml::table* st = get_table(root, "sanitize")) p.sanitize = read_sanitize(*st, p.tensors);
    return p;
  }

private:
  std::string m_file; // the problem.toml path as given, for messages
  std::string m_dir;  // its directory as given, for messages
};

fs::path absolute_dir(const fs::path& p) {
  std::error_code ec;
  fs::path a = fs::absolute(p.empty() ? fs::path(".") : p, ec);
  if (ec) a = p;
  a = a.lexically_normal();
  if (a.has_relative_path() && a.filename().empty()) a = a.parent_path();
  return a;
}

} // namespace

problem load(const fs::path& path) {
  std::error_code ec;
  fs::path toml_file, dir;
  if (fs::is_directory(path, ec)) {
    dir = path;
    toml_file = path / "problem.toml";
  } else if (path.extension() == ".toml" || fs::is_regular_file(path, ec)) {
    toml_file = path;
    dir = path.parent_path();
  } else {
    dir = path;
    toml_file = path / "problem.toml";
  }
  const std::string file = toml_file.string();
  const std::string dir_display = dir.empty() ? std::string(".") : dir.string();

  std::string text;
  {
    std::ifstream in(toml_file, std::ios::binary);
    if (!in || fs::is_directory(toml_file, ec))
      KFORGE_THROW(problem, "{}: cannot read file ({})", file,
                   fs::exists(toml_file, ec) ? "permission denied or not a file" : "no such file");
    std::ostringstream ss;
    ss << in.rdbuf();
    text = ss.str();
  }

  toml::table root;
#if TOML_EXCEPTIONS
  try {
    root = toml::parse(text, file);
  } catch (const toml::parse_error& e) {
    KFORGE_THROW(problem, "{}:{}:{}: {}", file, e.source().begin.line, e.source().begin.column, e.description());
  }
#else
  toml::parse_result r = toml::parse(text, file);
  if (!r) {
    const auto& e = r.error();
    KFORGE_THROW(problem, "{}:{}:{}: {}", file, e.source().begin.line, e.source().begin.column, e.description());
  }
  root = std::move(r).table();
#endif

  const fs::path abs_dir = absolute_dir(dir);
  problem p = loader(file, dir_display).read(root, abs_dir);
  p.dir = abs_dir;
  p.toml_path = abs_dir / toml_file.filename();
  p.toml_text = std::move(text);
  return p;
}

problem with_shapes(const problem& p, const std::map<std::string, std::vector<int64_t>>& shapes) {
  problem out = p;
  for (const auto& [name, shape] : shapes) {
    auto it = std::find_if(out.tensors.begin(), out.tensors.end(), [&](const tensor_spec& t) { return t.name == name; });
    if (it == out.tensors.end()) {
      std::vector<std::string> names;
      for (const auto& t : p.tensors) names.push_back(t.name);
      KFORGE_THROW(problem, "{}: shape override for '{}': no such tensor (tensors: {})", p.toml_path.string(), name,
                   join(names));
    }
    if (shape.empty() || std::any_of(shape.begin(), shape.end(), [](int64_t d) { return d <= 0; }))
      KFORGE_THROW(problem, "{}: shape override for '{}': dimensions must be positive, and at least one",
                   p.toml_path.string(), name);
    it->shape = shape;
  }
  return out;
}

problem sanitize_problem(const problem& p) { return with_shapes(p, p.sanitize.shapes); }

} // namespace kforge::problem
