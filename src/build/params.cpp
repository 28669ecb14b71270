// Tunable parameters: the `param` and `constraint` directives, a small recursive-descent
// parser for constraints (an expression tree, so && and || can short-circuit), and the
// enumerations the tuner draws from.
#include "build/params.hpp"

#include "core/error.hpp"
#include "core/text.hpp"

#include <algorithm>
#include <cctype>
#include <limits>
#include <set>

namespace kforge::build {
namespace {

constexpr std::size_t max_values = 65536;  // per parameter
constexpr std::uint64_t exact_sample_size = 65536;

// A mistake inside one directive; the line loop adds "FILE:LINE: kforge: VERB: ".
struct directive_error {
  std::string why;
};

bool is_ident_start(char c) { return std::isalpha(static_cast<unsigned char>(c)) || c == '_'; }
bool is_ident_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }


// `// kforge: VERB REST` at the start of a line (indentation allowed), as launch_plan reads it.
struct directive {
  std::string_view verb, rest;
  std::size_t indent = 0;     // bytes of indentation
  std::size_t rest_at = 0;    // offset of rest in the line
  bool python = false;        // `# kforge:` (a Python candidate) rather than `// kforge:`
};

std::optional<directive> match_directive(std::string_view line) {
  std::size_t i = 0;
  auto blanks = [&] {
    while (i < line.size() && (line[i] == ' ' || line[i] == '\t')) ++i;
  };
  blanks();
  directive d;
  d.indent = i;
  if (line.substr(i, 2) == "//") {
    i += 2;
  } else if (line.substr(i, 1) == "#") {
    d.python = true;
    i += 1;
  } else {
    return std::nullopt;
  }
  blanks();
  if (line.substr(i, 7) != "kforge:") return std::nullopt;
  i += 7;
  blanks();
  const auto v = i;
  while (i < line.size() && is_ident_char(line[i])) ++i;
  d.verb = line.substr(v, i - v);
  d.rest_at = i;
  d.rest = line.substr(i);
  if (!d.rest.empty() && d.rest.back() == '\r') d.rest.remove_suffix(1);
  return d;
}

// Calls fn(line_number, line) for each line, without its '\n' (a '\r' stays).
template <class Fn> void for_each_line(std::string_view source, Fn&& fn) {
  std::size_t pos = 0;
  int no = 0;
  while (pos <= source.size()) {
    auto end = source.find('\n', pos);
    if (end == std::string_view::npos) end = source.size();
    fn(++no, source.substr(pos, end - pos));
    pos = end + 1;
  }
}

std::string format_value(std::int64_t v) { return v < 0 ? fmt::format("({})", v) : std::to_string(v); }

std::string list_values(const std::vector<std::int64_t>& v) {
  std::string s = "{";
  const bool elide = v.size() > 12;
  for (std::size_t i = 0; i < v.size(); ++i) {
    if (elide && i == 4) {
      s += ", ...";
      i = v.size() - 2;
      continue;
    }
    s += (i ? ", " : "") + std::to_string(v[i]);
  }
  return s + "}";
}

// Names a #define would break, or that mean something in launch expressions.
bool reserved(const std::string& name) {
  static const std::set<std::string> words = {
      // launch-plan expression words (instantiate substitutes params in launch lines)
      "min", "max", "cdiv", "sizeof", "workspace", "dim3", "shape", "stride", "numel", "ndim",
      // C and C++ words a macro would redefine
      "alignas", "alignof", "auto", "bool", "break", "case", "char", "class", "const", "constexpr",
      "continue", "decltype", "default", "delete", "do", "double", "else", "enum", "extern", "false",
      "float", "for", "friend", "goto", "if", "inline", "int", "long", "namespace", "new", "nullptr",
      "operator", "private", "protected", "public", "register", "return", "short", "signed", "static",
      "static_assert", "struct", "switch", "template", "this", "true", "typedef", "typename", "union",
      "unsigned", "using", "virtual", "void", "volatile", "while", "half", "size_t",
      "__global__", "__device__", "__host__", "__shared__", "__constant__", "__restrict__",
      // Python words an assignment would shadow (a Python candidate's `# kforge: param`)
      "and", "as", "assert", "async", "await", "def", "del", "elif", "except", "finally", "from", "global", "import",
      "in", "is", "lambda", "nonlocal", "not", "or", "pass", "raise", "try", "with", "yield", "None", "True", "False",
      "self", "torch", "triton", "tl", "nn", "F", "math", "ModelNew", "Model"};
  return words.count(name) > 0 || name.rfind("KF_", 0) == 0 || name.rfind("__", 0) == 0;
}

// A cursor over one directive's text.
class cursor {
public:
  explicit cursor(std::string_view s) : m_s(s) {}
  void blanks() {
    while (m_pos < m_s.size() && std::isspace(static_cast<unsigned char>(m_s[m_pos]))) ++m_pos;
  }
  bool accept(std::string_view tok) {
    blanks();
    if (m_s.substr(m_pos, tok.size()) != tok) return false;
    // A word must end at a word boundary: "in" is not the start of "int".
    if (is_ident_char(tok.back()) && m_pos + tok.size() < m_s.size() && is_ident_char(m_s[m_pos + tok.size()]))
      return false;
    m_pos += tok.size();
    return true;
  }
  std::string ident() {
    blanks();
    const auto b = m_pos;
    if (m_pos < m_s.size() && is_ident_start(m_s[m_pos]))
      while (m_pos < m_s.size() && is_ident_char(m_s[m_pos])) ++m_pos;
    return std::string(m_s.substr(b, m_pos - b));
  }
  bool at_digit() {
    blanks();
    return m_pos < m_s.size() && std::isdigit(static_cast<unsigned char>(m_s[m_pos]));
  }
  // An optionally signed decimal integer; nullopt (position unchanged) when there is none.
  std::optional<std::int64_t> integer() {
    blanks();
    const auto b = m_pos;
    bool negative = false;
    if (m_pos < m_s.size() && (m_s[m_pos] == '-' || m_s[m_pos] == '+')) negative = m_s[m_pos++] == '-';
    blanks();
    const auto d = m_pos;
    while (m_pos < m_s.size() && std::isdigit(static_cast<unsigned char>(m_s[m_pos]))) ++m_pos;
    if (d == m_pos) {
      m_pos = b;
      return std::nullopt;
    }
    // Accumulate negatively so INT64_MIN parses.
    std::int64_t v = 0;
    for (auto i = d; i < m_pos; ++i)
      if (__builtin_mul_overflow(v, 10, &v) || __builtin_sub_overflow(v, m_s[i] - '0', &v))
        throw directive_error{fmt::format("{} does not fit in 64 bits", m_s.substr(b, m_pos - b))};
    if (!negative) {
      if (v == std::numeric_limits<std::int64_t>::min())
        throw directive_error{fmt::format("{} does not fit in 64 bits", m_s.substr(b, m_pos - b))};
      v = -v;
    }
    return v;
  }
  // At the end, or at a trailing `//` comment.
  bool at_end() {
    blanks();
    return m_pos == m_s.size() || m_s.substr(m_pos, 2) == "//" || m_s[m_pos] == '#';
  }
  void skip() { ++m_pos; }
  [[nodiscard]] std::size_t pos() const { return m_pos; }
  [[nodiscard]] char peek() const { return m_pos < m_s.size() ? m_s[m_pos] : '\0'; }
  [[nodiscard]] std::string_view rest() const { return m_s.substr(m_pos); }

private:
  std::string_view m_s;
  std::size_t m_pos = 0;
};

constexpr const char* param_form =
    "write 'param NAME = DEFAULT in {v1, v2, ...}' (or in [lo, hi], [lo, hi] step s, pow2[lo, hi])";

param_decl parse_param(std::string_view text, int line) {
  cursor c(text);
  param_decl p;
  p.line = line;
  p.name = c.ident();
  if (p.name.empty()) throw directive_error{fmt::format("expected a parameter name: {}", param_form)};
  if (reserved(p.name))
    throw directive_error{fmt::format("'{}' cannot be a parameter name: kforge defines it (a macro in C++, a module "
                                      "variable in Python), and it is a C++, Python or launch-expression word or starts "
                                      "with KF_ or __",
                                      p.name)};
  if (!c.accept("=")) throw directive_error{fmt::format("expected '=' and a default after '{}': {}", p.name, param_form)};
  const auto def = c.integer();
  if (!def) throw directive_error{fmt::format("expected an integer default for '{}': {}", p.name, param_form)};
  p.default_value = *def;
  if (!c.accept("in")) throw directive_error{fmt::format("expected 'in' after the default of '{}': {}", p.name, param_form)};

  auto need_int = [&](const char* what) {
    const auto v = c.integer();
    if (!v) throw directive_error{fmt::format("expected an integer {} in the values of '{}'", what, p.name)};
    return *v;
  };
  if (c.accept("{")) {
    if (c.accept("}")) throw directive_error{fmt::format("'{}' has an empty set of values", p.name)};
    do p.values.push_back(need_int("value"));
    while (c.accept(","));
    if (!c.accept("}")) throw directive_error{fmt::format("expected ',' or '}}' in the values of '{}'", p.name)};
    std::sort(p.values.begin(), p.values.end());
    p.values.erase(std::unique(p.values.begin(), p.values.end()), p.values.end());
    if (p.values.size() > max_values)
      throw directive_error{fmt::format("'{}' lists more than {} values", p.name, max_values)};
    p.domain = list_values(p.values);
  } else {
    const bool pow2 = c.accept("pow2");
    if (!c.accept("[")) throw directive_error{fmt::format("expected '{{', '[' or 'pow2[' after 'in': {}", param_form)};
    const auto lo = need_int("lower bound");
    if (!c.accept(",")) throw directive_error{fmt::format("expected ',' between the bounds of '{}'", p.name)};
    const auto hi = need_int("upper bound");
    if (!c.accept("]")) throw directive_error{fmt::format("expected ']' after the bounds of '{}'", p.name)};
    if (lo > hi) throw directive_error{fmt::format("'{}' has an empty range: {} > {}", p.name, lo, hi)};
    if (pow2) {
      for (std::int64_t v = 1; v > 0; v <<= 1)  // 2^0 .. 2^62
        if (v >= lo && v <= hi) p.values.push_back(v);
      if (p.values.empty())
        throw directive_error{fmt::format("'{}': pow2[{}, {}] contains no power of two", p.name, lo, hi)};
      p.domain = fmt::format("pow2[{}, {}]", lo, hi);
    } else {
      std::int64_t step = 1;
      if (c.accept("step")) {
        step = need_int("step");
        if (step <= 0) throw directive_error{fmt::format("'{}': the step must be positive, not {}", p.name, step)};
      }
      const auto count = (static_cast<unsigned __int128>(static_cast<__int128>(hi) - lo)) / static_cast<std::uint64_t>(step) + 1;
      if (count > max_values)
        throw directive_error{fmt::format("'{}': [{}, {}] step {} has {} values, more than {}: give a larger step, or "
                                          "use pow2[lo, hi]",
                                          p.name, lo, hi, step, static_cast<std::uint64_t>(count), max_values)};
      for (std::uint64_t i = 0; i < static_cast<std::uint64_t>(count); ++i)
        p.values.push_back(static_cast<std::int64_t>(static_cast<__int128>(lo) + static_cast<__int128>(i) * step));
      p.domain = step == 1 ? fmt::format("[{}, {}]", lo, hi) : fmt::format("[{}, {}] step {}", lo, hi, step);
    }
  }
  if (!c.at_end())
    throw directive_error{fmt::format("unexpected '{}' after the values of '{}'", trim(c.rest()), p.name)};
  if (!std::binary_search(p.values.begin(), p.values.end(), p.default_value))
    throw directive_error{
        fmt::format("the default {} of '{}' is not one of its values {}", p.default_value, p.name, list_values(p.values))};
  return p;
}

// The constraint grammar, C precedence:
//   or := and ('||' and)*        and := eq ('&&' eq)*          eq := rel (('=='|'!=') rel)*
//   rel := add (('<='|'>='|'<'|'>') add)*   add := mul (('+'|'-') mul)*
//   mul := unary (('*'|'/'|'%') unary)*     unary := ('-'|'+'|'!') unary | primary
//   primary := integer | NAME | min(or, or) | max(or, or) | '(' or ')'
class constraint_parser {
public:
  using op = constraint::op;
  constraint_parser(std::string_view text, const std::vector<std::string>& names, std::vector<constraint::node>& out)
      : m_text(text), m_names(names), m_out(out), m_c(text) {}

  int parse() {
    if (trim(m_text).empty()) fail("empty constraint");
    const int root = logical_or();
    m_c.blanks();
    if (m_c.pos() != m_text.size()) unexpected(m_c.peek());
    return root;
  }

private:
  [[noreturn]] void fail(const std::string& why) const {
    throw directive_error{fmt::format("in '{}' at column {}: {}", trim(m_text), m_c.pos() + 1, why)};
  }
  [[noreturn]] void unexpected(char c) const {
    if (c == '&' || c == '|' || c == '^' || c == '~')
      fail(fmt::format("unexpected '{}': bitwise operators are not supported (&& and || are)", c));
    fail(fmt::format("unexpected '{}'", c));
  }
  int emit(op code, int lhs = -1, int rhs = -1, std::int64_t value = 0, std::string name = {}) {
    m_out.push_back(constraint::node{code, value, std::move(name), lhs, rhs});
    return static_cast<int>(m_out.size()) - 1;
  }
  // Accepts `tok` unless it is the start of a longer operator (`<` of `<=`, `!` of `!=`).
  bool accept_op(std::string_view tok, std::string_view not_followed_by = {}) {
    m_c.blanks();
    const auto r = m_c.rest();
    if (r.substr(0, tok.size()) != tok) return false;
    if (!not_followed_by.empty() && r.size() > tok.size() && not_followed_by.find(r[tok.size()]) != std::string_view::npos)
      return false;
    return m_c.accept(tok);
  }

  int logical_or() {
    int l = logical_and();
    while (accept_op("||")) l = emit(op::lor, l, logical_and());
    return l;
  }
  int logical_and() {
    int l = equality();
    while (accept_op("&&")) l = emit(op::land, l, equality());
    return l;
  }
  int equality() {
    int l = relational();
    for (;;) {
      if (accept_op("==")) l = emit(op::eq, l, relational());
      else if (accept_op("!=")) l = emit(op::ne, l, relational());
      else return l;
    }
  }
  int relational() {
    int l = additive();
    for (;;) {
      if (accept_op("<=")) l = emit(op::le, l, additive());
      else if (accept_op(">=")) l = emit(op::ge, l, additive());
      else if (accept_op("<", "<")) l = emit(op::lt, l, additive());
      else if (accept_op(">", ">")) l = emit(op::gt, l, additive());
      else return l;
    }
  }
  int additive() {
    int l = multiplicative();
    for (;;) {
      if (accept_op("+")) l = emit(op::add, l, multiplicative());
      else if (accept_op("-")) l = emit(op::sub, l, multiplicative());
      else return l;
    }
  }
  int multiplicative() {
    int l = unary();
    for (;;) {
      if (accept_op("*")) l = emit(op::mul, l, unary());
      else if (accept_op("/")) l = emit(op::div, l, unary());
      else if (accept_op("%")) l = emit(op::mod, l, unary());
      else return l;
    }
  }
  int unary() {
    if (accept_op("-")) return emit(op::neg, unary());
    if (accept_op("+")) return unary();
    if (accept_op("!", "=")) return emit(op::lnot, unary());
    return primary();
  }
  int primary() {
    m_c.blanks();
    if (m_c.pos() >= m_text.size()) fail("the expression ends early");
    if (m_c.at_digit()) {
      const auto v = m_c.integer();
      // C suffixes, as in 256u or 1ll, mean nothing here.
      while (m_c.peek() == 'u' || m_c.peek() == 'U' || m_c.peek() == 'l' || m_c.peek() == 'L') m_c.skip();
      return emit(op::constant, -1, -1, *v);
    }
    if (accept_op("(")) {
      const int e = logical_or();
      if (!accept_op(")")) fail("expected ')'");
      return e;
    }
    const char first = m_c.peek();
    const auto name = m_c.ident();
    if (name.empty()) unexpected(first);
    if ((name == "min" || name == "max") && accept_op("(")) {
      const int a = logical_or();
      if (!accept_op(",")) fail(fmt::format("expected ',' in {}(a, b)", name));
      const int b = logical_or();
      if (!accept_op(")")) fail(fmt::format("expected ')' after {}(a, b)", name));
      return emit(name == "min" ? op::min : op::max, a, b);
    }
    if (std::find(m_names.begin(), m_names.end(), name) == m_names.end()) {
      std::string hint, all;
      std::size_t best = 3;
      for (const auto& n : m_names) {
        all += (all.empty() ? "" : ", ") + n;
        if (const auto d = edit_distance(n, name); d < best) best = d, hint = n;
      }
      fail(fmt::format("unknown parameter '{}'{} ({})", name, hint.empty() ? "" : fmt::format(" (did you mean '{}'?)", hint),
                       all.empty() ? "no parameters are declared" : "declared: " + all));
    }
    return emit(op::param, -1, -1, 0, name);
  }

  std::string_view m_text;
  const std::vector<std::string>& m_names;
  std::vector<constraint::node>& m_out;
  cursor m_c;
};

std::string values_of(const constraint& c, const assignment& a) {
  std::string s;
  for (const auto& n : c.names())
    if (auto it = a.find(n); it != a.end()) s += (s.empty() ? "" : " ") + n + "=" + std::to_string(it->second);
  return s;
}

// Replaces whole-word parameter names in a launch/workspace directive's text; a name after
// '.' is a tensor attribute, and a run that starts with a digit is a number (256u stays).
std::string substitute(std::string_view text, const param_space& space, const assignment& a) {
  std::string out;
  std::size_t i = 0;
  while (i < text.size()) {
    if (is_ident_char(text[i])) {
      const auto b = i;
      while (i < text.size() && is_ident_char(text[i])) ++i;
      const std::string word(text.substr(b, i - b));
      std::size_t p = b;
      while (p > 0 && (text[p - 1] == ' ' || text[p - 1] == '\t')) --p;
      const bool member = p > 0 && text[p - 1] == '.';
      if (is_ident_start(word[0]) && !member && space.find(word)) out += format_value(a.at(word));
      else out += word;
    } else {
      out += text[i++];
    }
  }
  return out;
}

} // namespace

// ---- constraint ------------------------------------------------------------------------

constraint constraint::parse(std::string_view text, const std::vector<std::string>& names, int line) {
  constraint c;
  c.m_text = std::string(trim(text));
  c.m_line = line;
  try {
    c.m_root = constraint_parser(c.m_text, names, c.m_nodes).parse();
  } catch (const directive_error& e) {
    KFORGE_THROW(build, "{}", e.why);
  }
  for (const auto& n : c.m_nodes)
    if (n.code == op::param) c.m_names.push_back(n.name);
  std::sort(c.m_names.begin(), c.m_names.end());
  c.m_names.erase(std::unique(c.m_names.begin(), c.m_names.end()), c.m_names.end());
  return c;
}

bool constraint::holds(const assignment& a) const {
  const auto v = eval(m_root, a);
  return v && *v != 0;
}

std::optional<std::int64_t> constraint::eval(int at, const assignment& a) const {
  const node& n = m_nodes[static_cast<std::size_t>(at)];
  switch (n.code) {
  case op::constant: return n.value;
  case op::param: {
    const auto it = a.find(n.name);
    if (it == a.end()) KFORGE_THROW(build, "constraint '{}' reads '{}', which the assignment does not set", m_text, n.name);
    return it->second;
  }
  case op::land: {
    const auto l = eval(n.lhs, a);
    if (!l || *l == 0) return l ? std::optional<std::int64_t>(0) : std::nullopt;
    const auto r = eval(n.rhs, a);
    return r ? std::optional<std::int64_t>(*r != 0) : std::nullopt;
  }
  case op::lor: {
    const auto l = eval(n.lhs, a);
    if (!l) return std::nullopt;
    if (*l != 0) return 1;
    const auto r = eval(n.rhs, a);
    return r ? std::optional<std::int64_t>(*r != 0) : std::nullopt;
  }
  default: break;
  }
  const auto l = eval(n.lhs, a);
  if (!l) return std::nullopt;
  if (n.code == op::neg) {
    if (*l == std::numeric_limits<std::int64_t>::min()) return std::nullopt;
    return -*l;
  }
  if (n.code == op::lnot) return *l == 0;
  const auto r = eval(n.rhs, a);
  if (!r) return std::nullopt;
  std::int64_t v = 0;
  switch (n.code) {
  case op::add: return __builtin_add_overflow(*l, *r, &v) ? std::nullopt : std::optional(v);
  case op::sub: return __builtin_sub_overflow(*l, *r, &v) ? std::nullopt : std::optional(v);
  case op::mul: return __builtin_mul_overflow(*l, *r, &v) ? std::nullopt : std::optional(v);
  case op::div:
  case op::mod:
    if (*r == 0 || (*l == std::numeric_limits<std::int64_t>::min() && *r == -1)) return std::nullopt;
    return n.code == op::div ? *l / *r : *l % *r;
  case op::lt: return *l < *r;
  case op::le: return *l <= *r;
  case op::gt: return *l > *r;
  case op::ge: return *l >= *r;
  case op::eq: return *l == *r;
  case op::ne: return *l != *r;
  case op::min: return std::min(*l, *r);
  case op::max: return std::max(*l, *r);
  default: KFORGE_ASSERT(false);
  }
  return std::nullopt;
}

// ---- param_space -------------------------------------------------------------------------

std::uint64_t param_space::size() const {
  std::uint64_t n = 1;
  for (const auto& p : params)
    if (__builtin_mul_overflow(n, static_cast<std::uint64_t>(p.values.size()), &n))
      return std::numeric_limits<std::uint64_t>::max();
  return n;
}

const param_decl* param_space::find(std::string_view name) const {
  for (const auto& p : params)
    if (p.name == name) return &p;
  return nullptr;
}

std::string param_space::rejection(const assignment& a) const {
  for (const auto& p : params) {
    const auto it = a.find(p.name);
    if (it == a.end()) return fmt::format("{} is not set", p.name);
    if (!std::binary_search(p.values.begin(), p.values.end(), it->second))
      return fmt::format("{}={} is not one of {}", p.name, it->second, p.domain);
  }
  for (const auto& [name, value] : a)
    if (!find(name)) {
      std::string all;
      for (const auto& p : params) all += (all.empty() ? "" : ", ") + p.name;
      return fmt::format("{} is not a parameter ({})", name, all.empty() ? "none are declared" : "declared: " + all);
    }
  for (const auto& c : constraints)
    if (!c.holds(a)) {
      const auto v = values_of(c, a);
      return fmt::format("{}violates constraint '{}' (line {})", v.empty() ? "" : v + " ", c.text(), c.line());
    }
  return {};
}

bool param_space::admits(const assignment& a) const { return rejection(a).empty(); }

std::string param_space::describe() const {
  if (params.empty() && constraints.empty()) return "no tunable parameters\n";
  std::string s;
  for (const auto& p : params)
    s += fmt::format("param {} in {}, default {} ({} value{}, line {})\n", p.name, p.domain, p.default_value,
                     p.values.size(), p.values.size() == 1 ? "" : "s", p.line);
  for (const auto& c : constraints) s += fmt::format("constraint {} (line {})\n", c.text(), c.line());
  const auto n = size();
  s += n == std::numeric_limits<std::uint64_t>::max()
           ? std::string("more than 2^64 combinations before constraints\n")
           : fmt::format("{} combination{} before constraints\n", n, n == 1 ? "" : "s");
  return s;
}

// ---- parsing and instantiation ---------------------------------------------------------------

bool declares_params(std::string_view source) {
  bool found = false;
  for_each_line(source, [&](int, std::string_view line) {
    if (!found)
      if (const auto d = match_directive(line)) found = d->verb == "param";
  });
  return found;
}

param_space parse_params(std::string_view source, const std::string& file) {
  param_space space;
  struct pending {
    std::string text;
    int line;
  };
  std::vector<pending> constraint_lines;
  auto where = [&](int line, std::string_view verb, const std::string& why) {
    return kforge::error(error_kind::build, fmt::format("{}:{}: kforge: {}: {}", file, line, verb, why));
  };
  for_each_line(source, [&](int no, std::string_view line) {
    const auto d = match_directive(line);
    if (!d) return;
    if (d->verb == "param") {
      param_decl p;
      try {
        p = parse_param(d->rest, no);
      } catch (const directive_error& e) {
        throw where(no, d->verb, e.why);
      }
      if (const auto* first = space.find(p.name))
        throw where(no, d->verb, fmt::format("'{}' is declared twice (first on line {})", p.name, first->line));
      space.params.push_back(std::move(p));
    } else if (d->verb == "constraint") {
      constraint_lines.push_back({std::string(d->rest), no});
    }
  });
  // Constraints may name parameters declared below them: parse them once all are known.
  std::vector<std::string> names;
  for (const auto& p : space.params) names.push_back(p.name);
  for (const auto& c : constraint_lines) {
    try {
      space.constraints.push_back(constraint::parse(c.text, names, c.line));
    } catch (const kforge::error& e) {
      throw where(c.line, "constraint", e.what());
    }
  }
  const auto d = defaults(space);
  for (const auto& c : space.constraints)
    if (!c.holds(d))
      throw where(c.line(), "constraint",
                  fmt::format("the defaults ({}) violate '{}'; change a default or the constraint", values_of(c, d),
                              c.text()));
  return space;
}

assignment defaults(const param_space& space) {
  assignment a;
  for (const auto& p : space.params) a[p.name] = p.default_value;
  return a;
}

std::string instantiate(std::string_view source, const param_space& space, const assignment& a) {
  if (const auto why = space.rejection(a); !why.empty())
    KFORGE_THROW(build, "cannot instantiate the candidate with {}: {}", to_string(a), why);
  std::string out;
  out.reserve(source.size() + 64 * space.params.size());
  std::set<std::string> seen;
  bool first = true;
  for_each_line(source, [&](int no, std::string_view line) {
    if (!first) out += '\n';
    first = false;
    const auto d = match_directive(line);
    const std::string_view cr = !line.empty() && line.back() == '\r' ? "\r" : "";
    if (d && d->verb == "param") {
      cursor c(d->rest);
      const auto name = c.ident();
      const auto* p = space.find(name);
      if (!p)
        KFORGE_THROW(build, "line {} declares parameter '{}', which the parameter space does not have: parse the space "
                            "from this source",
                     no, name);
      seen.insert(name);
      out += line.substr(0, d->indent);
      // A Python candidate gets a module-level assignment where C gets a macro.
      out += d->python ? fmt::format("{} = {}  # kforge: tuned {} in {}", name, a.at(name), name, p->domain)
                       : fmt::format("#define {} {}  // kforge: tuned {} in {}", name, format_value(a.at(name)), name,
                                     p->domain);
      out += cr;
    } else if (d && d->verb == "constraint") {
      out += line.substr(0, d->indent);
      out += d->python ? "# kforge-constraint: " : "// kforge-constraint: ";
      out += trim(d->rest);
      out += cr;
    } else if (d && (d->verb == "launch" || d->verb == "workspace")) {
      out += line.substr(0, d->rest_at);
      out += substitute(d->rest, space, a);
      out += cr;
    } else {
      out += line;
    }
  });
  for (const auto& p : space.params)
    if (!seen.count(p.name))
      KFORGE_THROW(build, "parameter '{}' (line {}) is not declared in this source: parse the space from this source",
                   p.name, p.line);
  return out;
}

// ---- enumeration -----------------------------------------------------------------------------

namespace {

// Depth-first over the parameters in declaration order; a constraint is checked at the
// depth of the last parameter it reads, so a rejected prefix is never extended.
class grid_walker {
public:
  grid_walker(const param_space& s, std::size_t limit) : m_space(s), m_limit(limit), m_at(s.params.size() + 1) {
    for (const auto& c : s.constraints) {
      std::size_t depth = 0; // 0: reads no parameter; k: the k-th parameter (1-based) is its last
      for (const auto& n : c.names())
        for (std::size_t i = 0; i < s.params.size(); ++i)
          if (s.params[i].name == n) depth = std::max(depth, i + 1);
      m_at[depth].push_back(&c);
    }
  }
  std::vector<assignment> run() {
    if (m_limit > 0 && passes(0)) walk(0);
    return std::move(m_out);
  }

private:
  bool passes(std::size_t depth) const {
    return std::all_of(m_at[depth].begin(), m_at[depth].end(), [&](const constraint* c) { return c->holds(m_cur); });
  }
  void walk(std::size_t i) {
    if (i == m_space.params.size()) {
      m_out.push_back(m_cur);
      return;
    }
    const auto& p = m_space.params[i];
    for (const auto v : p.values) {
      m_cur[p.name] = v;
      if (passes(i + 1)) walk(i + 1);
      if (m_out.size() >= m_limit) return;
    }
    m_cur.erase(p.name);
  }

  const param_space& m_space;
  std::size_t m_limit;
  std::vector<std::vector<const constraint*>> m_at;
  assignment m_cur;
  std::vector<assignment> m_out;
};

} // namespace

std::vector<assignment> grid(const param_space& space, std::size_t limit) { return grid_walker(space, limit).run(); }

std::vector<assignment> sample(const param_space& space, std::size_t n, std::mt19937_64& rng) {
  if (n == 0) return {};
  if (space.size() <= exact_sample_size) {
    auto all = grid(space, std::numeric_limits<std::size_t>::max());
    const auto take = std::min(n, all.size());
    for (std::size_t i = 0; i < take; ++i) { // partial Fisher-Yates: the first `take` are a uniform draw
      std::uniform_int_distribution<std::size_t> pick(i, all.size() - 1);
      std::swap(all[i], all[pick(rng)]);
    }
    all.resize(take);
    return all;
  }
  // Rejection over the cartesian product is uniform over the admissible points; bounded.
  std::vector<assignment> out;
  std::set<std::string> seen;
  const std::size_t attempts = std::min<std::size_t>(1000 + 100 * n, 2'000'000);
  for (std::size_t t = 0; t < attempts && out.size() < n; ++t) {
    assignment a;
    for (const auto& p : space.params) {
      std::uniform_int_distribution<std::size_t> pick(0, p.values.size() - 1);
      a[p.name] = p.values[pick(rng)];
    }
    if (space.admits(a) && seen.insert(key(a)).second) out.push_back(std::move(a));
  }
  return out;
}

std::vector<assignment> neighbours(const param_space& space, const assignment& a) {
  std::vector<assignment> out;
  for (const auto& p : space.params) {
    const auto it = a.find(p.name);
    if (it == a.end()) KFORGE_THROW(build, "neighbours of {}: {} is not set", to_string(a), p.name);
    const auto at = std::lower_bound(p.values.begin(), p.values.end(), it->second);
    if (at == p.values.end() || *at != it->second)
      KFORGE_THROW(build, "neighbours of {}: {}={} is not one of {}", to_string(a), p.name, it->second, p.domain);
    const auto i = static_cast<std::size_t>(at - p.values.begin());
    for (const auto j : {i - 1, i + 1}) {
      if (j >= p.values.size()) continue; // i - 1 wraps to SIZE_MAX at the bottom
      assignment b = a;
      b[p.name] = p.values[j];
      if (space.admits(b)) out.push_back(std::move(b));
    }
  }
  return out;
}

std::string to_string(const assignment& a) {
  std::string s;
  for (const auto& [name, value] : a) s += fmt::format("{}{}={}", s.empty() ? "" : " ", name, value);
  return s;
}

std::string key(const assignment& a) {
  std::string s;
  for (const auto& [name, value] : a) s += fmt::format("{}{}={}", s.empty() ? "" : ",", name, value);
  return s;
}

} // namespace kforge::build
