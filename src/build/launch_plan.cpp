// Launch directives of kernel-only candidates: a recursive-descent parser that compiles
// each expression to a stack program, evaluated on every call against the call's shapes.
#include "build/launch_plan.hpp"

#include "core/dtype.hpp"
#include "core/error.hpp"
#include "core/text.hpp"

#include <algorithm>
#include <cctype>
#include <limits>
#include <map>
#include <regex>

namespace kforge::build {
namespace {

std::string trim(std::string_view s) {
  auto b = s.find_first_not_of(" \t\r");
  if (b == std::string_view::npos) return {};
  auto e = s.find_last_not_of(" \t\r");
  return std::string(s.substr(b, e - b + 1));
}

bool is_identifier(std::string_view s) {
  if (s.empty() || !(std::isalpha(static_cast<unsigned char>(s[0])) || s[0] == '_')) return false;
  return std::all_of(s.begin(), s.end(), [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; });
}

// Splits at commas outside (), [] and <> nesting: "dim3(a, b), 256" -> {"dim3(a, b)", "256"}.
std::vector<std::string> split_top_level(std::string_view s) {
  std::vector<std::string> parts;
  int depth = 0;
  std::size_t start = 0;
  for (std::size_t i = 0; i < s.size(); ++i) {
    const char c = s[i];
    if (c == '(' || c == '[') ++depth;
    else if (c == ')' || c == ']') --depth;
    else if (c == ',' && depth == 0) {
      parts.push_back(trim(s.substr(start, i - start)));
      start = i + 1;
    }
  }
  parts.push_back(trim(s.substr(start)));
  return parts;
}

std::size_t sizeof_type(const std::string& t, kf_dtype real) {
  static const std::map<std::string, std::size_t> sizes = {
      {"char", 1}, {"int8_t", 1}, {"uint8_t", 1}, {"bool", 1},
      {"half", 2}, {"__half", 2}, {"bfloat16", 2}, {"__nv_bfloat16", 2}, {"short", 2},
      {"float", 4}, {"int", 4}, {"unsigned", 4}, {"unsigned int", 4}, {"int32_t", 4}, {"uint32_t", 4},
      {"float2", 8}, {"double", 8}, {"long", 8}, {"long long", 8}, {"unsigned long", 8},
      {"unsigned long long", 8}, {"int64_t", 8}, {"uint64_t", 8}, {"size_t", 8},
      {"float4", 16}, {"double2", 16}};
  if (t == "KF_REAL") return dtype_size(real);
  if (auto it = sizes.find(t); it != sizes.end()) return it->second;
  KFORGE_THROW(build, "sizeof({}): unknown type (known: KF_REAL, float, double, half, bfloat16, int, long, ...)", t);
}

class expr_parser {
public:
  expr_parser(std::string_view text, kf_dtype real, std::vector<shape_expr::step>& out)
      : m_text(text), m_real(real), m_out(out) {}

  void parse() {
    if (trim(m_text).empty()) fail("empty expression");
    expression();
    skip_space();
    if (m_pos != m_text.size()) fail(fmt::format("unexpected '{}'", m_text[m_pos]));
  }

private:
  using step = shape_expr::step;
  using op = shape_expr::op;

  [[noreturn]] void fail(const std::string& why) const {
    KFORGE_THROW(build, "in '{}' at column {}: {}", std::string(m_text), m_pos + 1, why);
  }
  void skip_space() {
    while (m_pos < m_text.size() && std::isspace(static_cast<unsigned char>(m_text[m_pos]))) ++m_pos;
  }
  bool accept(char c) {
    skip_space();
    if (m_pos < m_text.size() && m_text[m_pos] == c) {
      ++m_pos;
      return true;
    }
    return false;
  }
  void expect(char c) {
    if (!accept(c)) fail(fmt::format("expected '{}'", c));
  }
  std::string identifier() {
    skip_space();
    const auto b = m_pos;
    while (m_pos < m_text.size() && (std::isalnum(static_cast<unsigned char>(m_text[m_pos])) || m_text[m_pos] == '_'))
      ++m_pos;
    return std::string(m_text.substr(b, m_pos - b));
  }
  std::int64_t number() {
    skip_space();
    const auto b = m_pos;
    while (m_pos < m_text.size() && std::isdigit(static_cast<unsigned char>(m_text[m_pos]))) ++m_pos;
    if (b == m_pos) fail("expected a number");
    const std::string digits(m_text.substr(b, m_pos - b));
    while (m_pos < m_text.size() && (m_text[m_pos] == 'u' || m_text[m_pos] == 'U' || m_text[m_pos] == 'l' ||
                                     m_text[m_pos] == 'L'))
      ++m_pos; // C suffixes, as in 256u or 1ll
    try {
      return std::stoll(digits);
    } catch (...) {
      fail("number out of range");
    }
  }
  void emit(op code, std::int64_t value = 0) { m_out.push_back(step{code, value, {}, {}, -1}); }

  void expression() {
    term();
    for (;;) {
      if (accept('+')) term(), emit(op::add);
      else if (accept('-')) term(), emit(op::sub);
      else return;
    }
  }
  void term() {
    unary();
    for (;;) {
      if (accept('*')) unary(), emit(op::mul);
      else if (accept('/')) unary(), emit(op::div);
      else if (accept('%')) unary(), emit(op::mod);
      else return;
    }
  }
  void unary() {
    if (accept('-')) {
      unary();
      emit(op::neg);
    } else {
      primary();
    }
  }
  void primary() {
    skip_space();
    if (m_pos >= m_text.size()) fail("expression ends early");
    const char c = m_text[m_pos];
    if (std::isdigit(static_cast<unsigned char>(c))) return emit(op::constant, number());
    if (accept('(')) {
      expression();
      return expect(')');
    }
    const auto name = identifier();
    if (name.empty()) fail(fmt::format("unexpected '{}'", c));
    if (name == "sizeof") {
      expect('(');
      const auto close = m_text.find(')', m_pos);
      if (close == std::string_view::npos) fail("sizeof( without ')'");
      std::string type;
      for (auto& word : split_words(m_text.substr(m_pos, close - m_pos))) type += (type.empty() ? "" : " ") + word;
      m_pos = close + 1;
      try {
        return emit(op::constant, static_cast<std::int64_t>(sizeof_type(type, m_real)));
      } catch (const kforge::error& e) {
        fail(e.what());
      }
    }
    if (name == "min" || name == "max" || name == "cdiv") {
      expect('(');
      expression();
      expect(',');
      expression();
      expect(')');
      return emit(name == "min" ? op::min : name == "max" ? op::max : op::cdiv);
    }
    // NAME.shape[d] | NAME.stride[d] | NAME.numel | NAME.ndim
    if (!accept('.'))
      fail(fmt::format("'{}' alone is not a number: write {}.shape[d], {}.stride[d], {}.numel or {}.ndim", name, name,
                       name, name, name));
    const auto a = identifier();
    step s{op::tensor, 0, shape_expr::attr::numel, name, -1};
    if (a == "shape" || a == "stride") {
      s.what = a == "shape" ? shape_expr::attr::shape : shape_expr::attr::stride;
      expect('[');
      const bool negative = accept('-');
      s.value = negative ? -number() : number();
      expect(']');
    } else if (a == "numel") {
      s.what = shape_expr::attr::numel;
    } else if (a == "ndim") {
      s.what = shape_expr::attr::ndim;
    } else {
      fail(fmt::format("'{}.{}': a tensor has shape[d], stride[d], numel and ndim", name, a));
    }
    m_out.push_back(std::move(s));
  }
  static std::vector<std::string> split_words(std::string_view s) {
    std::vector<std::string> w;
    std::string cur;
    for (char c : s) {
      if (std::isspace(static_cast<unsigned char>(c))) {
        if (!cur.empty()) w.push_back(std::move(cur)), cur.clear();
      } else {
        cur += c;
      }
    }
    if (!cur.empty()) w.push_back(std::move(cur));
    return w;
  }

  std::string_view m_text;
  kf_dtype m_real;
  std::vector<shape_expr::step>& m_out;
  std::size_t m_pos = 0;
};

int bind_slot(const std::string& name, const std::vector<std::string>& inputs, const std::vector<std::string>& outputs) {
  for (std::size_t i = 0; i < inputs.size(); ++i)
    if (inputs[i] == name) return static_cast<int>(i);
  for (std::size_t i = 0; i < outputs.size(); ++i)
    if (outputs[i] == name) return static_cast<int>(inputs.size() + i);
  std::string all, hint;
  std::size_t best = 3;
  for (auto* names : {&inputs, &outputs})
    for (auto& n : *names) {
      all += (all.empty() ? "" : ", ") + n;
      if (auto d = edit_distance(n, name); d < best) best = d, hint = n;
    }
  KFORGE_THROW(build, "unknown tensor '{}'{} (the problem's tensors: {})", name,
               hint.empty() ? "" : fmt::format(" (did you mean '{}'?)", hint), all);
}

const kf_tensor& tensor_at(const kf_args& a, int slot) {
  return slot < a.num_inputs ? a.inputs[slot] : a.outputs[slot - a.num_inputs];
}

void overflow_if(bool overflow, const std::string& text) {
  if (overflow) KFORGE_THROW(worker, "'{}' overflows a 64-bit integer", text);
}

} // namespace

shape_expr shape_expr::parse(std::string_view text, kf_dtype real) {
  shape_expr e;
  e.m_text = trim(text);
  expr_parser(e.m_text, real, e.m_program).parse();
  return e;
}

void shape_expr::bind(const std::vector<std::string>& inputs, const std::vector<std::string>& outputs) {
  for (auto& s : m_program)
    if (s.code == op::tensor) s.slot = bind_slot(s.name, inputs, outputs);
  m_num_inputs = static_cast<int>(inputs.size());
}

std::int64_t shape_expr::evaluate(const kf_args& a) const {
  KFORGE_ASSERT(m_num_inputs >= 0 || std::none_of(m_program.begin(), m_program.end(),
                                                  [](const step& s) { return s.code == op::tensor; }));
  std::int64_t stack[64];
  int top = 0;
  for (const auto& s : m_program) {
    if (s.code == op::constant || s.code == op::tensor) {
      if (top == 64) KFORGE_THROW(worker, "'{}' is too deeply nested", m_text);
      std::int64_t v = s.value;
      if (s.code == op::tensor) {
        const kf_tensor& t = tensor_at(a, s.slot);
        if (s.what == attr::ndim) {
          v = t.ndim;
        } else if (s.what == attr::numel) {
          v = 1;
          for (int d = 0; d < t.ndim; ++d) v *= t.shape[d];
        } else {
          const std::int64_t d = s.value < 0 ? t.ndim + s.value : s.value;
          if (d < 0 || d >= t.ndim)
            KFORGE_THROW(worker, "'{}': {}.{}[{}] but '{}' has {} dimensions", m_text, s.name,
                         s.what == attr::shape ? "shape" : "stride", s.value, s.name, t.ndim);
          v = s.what == attr::shape ? t.shape[d] : t.strides[d];
        }
      }
      stack[top++] = v;
      continue;
    }
    if (s.code == op::neg) {
      overflow_if(stack[top - 1] == std::numeric_limits<std::int64_t>::min(), m_text);
      stack[top - 1] = -stack[top - 1];
      continue;
    }
    const std::int64_t r = stack[--top];
    std::int64_t& l = stack[top - 1];
    switch (s.code) {
    case op::add: overflow_if(__builtin_add_overflow(l, r, &l), m_text); break;
    case op::sub: overflow_if(__builtin_sub_overflow(l, r, &l), m_text); break;
    case op::mul: overflow_if(__builtin_mul_overflow(l, r, &l), m_text); break;
    case op::div:
    case op::mod:
    case op::cdiv:
      if (r == 0) KFORGE_THROW(worker, "'{}' divides by zero", m_text);
      if (s.code == op::div) l = l / r;
      else if (s.code == op::mod) l = l % r;
      else l = l / r + ((l % r != 0) && ((l < 0) == (r < 0)) ? 1 : 0);
      break;
    case op::min: l = std::min(l, r); break;
    case op::max: l = std::max(l, r); break;
    default: KFORGE_ASSERT(false);
    }
  }
  KFORGE_ASSERT(top == 1);
  return stack[0];
}

bool declares_launches(std::string_view source) {
  static const std::regex launch(R"(^[ \t]*//[ \t]*kforge:[ \t]*launch\b)", std::regex::multiline);
  return std::regex_search(source.begin(), source.end(), launch);
}

launch_plan parse_launch_plan(std::string_view source, const std::string& file, kf_dtype real) {
  launch_plan plan;
  plan.file = file;
  plan.real = real;
  static const std::regex directive(R"(^[ \t]*//[ \t]*kforge:[ \t]*(\w*)(.*)$)");
  std::size_t pos = 0;
  int line_no = 0;
  while (pos <= source.size()) {
    auto end = source.find('\n', pos);
    if (end == std::string_view::npos) end = source.size();
    std::string line(source.substr(pos, end - pos));
    if (!line.empty() && line.back() == '\r') line.pop_back(); // CRLF: std::regex's '.' stops at '\r'
    pos = end + 1;
    ++line_no;
    std::smatch m;
    if (!std::regex_match(line, m, directive)) continue;
    const std::string verb = m[1], rest = trim(m[2].str());
    auto where = [&](const std::string& why) {
      return kforge::error(error_kind::build, fmt::format("{}:{}: kforge: {}: {}", file, line_no, verb, why));
    };
    try {
      if (verb == "workspace") {
        if (plan.has_workspace) throw where("declared twice");
        plan.workspace = shape_expr::parse(rest, real);
        plan.has_workspace = true;
      } else if (verb == "launch") {
        launch l;
        l.line = line_no;
        const auto open = rest.find("<<<"), close = rest.find(">>>");
        if (open == std::string::npos || close == std::string::npos || close < open)
          throw where("expected KERNEL<<<grid, block[, shared_bytes]>>>(args...)");
        l.kernel = trim(rest.substr(0, open));
        if (l.kernel.empty()) throw where("no kernel name before <<<");
        const auto config = split_top_level(rest.substr(open + 3, close - open - 3));
        if (config.size() < 2 || config.size() > 3)
          throw where(config.size() > 3 ? "the stream is kforge's: give grid, block and optionally shared memory bytes"
                                        : "give grid and block (and optionally shared memory bytes)");
        auto dims = [&](const std::string& text, std::array<shape_expr, 3>& out) {
          std::vector<std::string> parts{text};
          if (text.rfind("dim3", 0) == 0) {
            const auto a = text.find('('), b = text.rfind(')');
            if (a == std::string::npos || b == std::string::npos || b < a) throw where("dim3(...) is not closed");
            parts = split_top_level(std::string_view(text).substr(a + 1, b - a - 1));
            if (parts.empty() || parts.size() > 3) throw where("dim3 takes one to three expressions");
          }
          for (std::size_t d = 0; d < 3; ++d) out[d] = shape_expr::parse(d < parts.size() ? parts[d] : "1", real);
        };
        dims(config[0], l.grid);
        dims(config[1], l.block);
        l.smem = shape_expr::parse(config.size() == 3 ? config[2] : "0", real);
        const std::string after = trim(rest.substr(close + 3));
        if (after.size() < 2 || after.front() != '(' || after.back() != ')')
          throw where("expected the kernel's arguments in parentheses after >>>");
        const std::string inner = trim(std::string_view(after).substr(1, after.size() - 2));
        if (!inner.empty())
          for (auto& a : split_top_level(inner)) {
            launch_arg arg;
            if (a == "workspace") arg.what = launch_arg::kind::workspace;
            else if (is_identifier(a)) arg.what = launch_arg::kind::tensor, arg.tensor = a;
            else arg.what = launch_arg::kind::integer, arg.value = shape_expr::parse(a, real);
            l.args.push_back(std::move(arg));
          }
        plan.launches.push_back(std::move(l));
      } else if (verb == "param" || verb == "constraint") {
        // Tunable parameters (build/params.hpp): propose::instantiate turns them into #defines.
      } else {
        throw where("unknown directive (kernel-only candidates declare 'launch' and optionally 'workspace', "
                    "'param' and 'constraint')");
      }
    } catch (const kforge::error& e) {
      const std::string msg = e.what();
      if (msg.rfind(file + ":", 0) == 0) throw;
      throw where(msg);
    }
  }
  if (plan.launches.empty())
    KFORGE_THROW(build, "{}: a kernel-only candidate needs at least one '// kforge: launch KERNEL<<<grid, block>>>(args)'",
                 file);
  return plan;
}

void launch_plan::bind(const std::vector<std::string>& inputs, const std::vector<std::string>& outputs) {
  auto at = [&](int line, auto&& fn) {
    try {
      fn();
    } catch (const kforge::error& e) {
      KFORGE_THROW(build, "{}:{}: kforge: launch: {}", file, line, e.what());
    }
  };
  for (auto& l : launches)
    at(l.line, [&] {
      for (auto* set : {&l.grid, &l.block})
        for (auto& e : *set) e.bind(inputs, outputs);
      l.smem.bind(inputs, outputs);
      for (auto& a : l.args) {
        if (a.what == launch_arg::kind::tensor) a.slot = bind_slot(a.tensor, inputs, outputs);
        if (a.what == launch_arg::kind::integer) a.value.bind(inputs, outputs);
      }
    });
  if (has_workspace) at(0, [&] { workspace.bind(inputs, outputs); });
}

std::vector<resolved_launch> launch_plan::evaluate(const kf_args& a) const {
  std::vector<resolved_launch> out;
  out.reserve(launches.size());
  for (const auto& l : launches) {
    resolved_launch r;
    auto fail = [&](const std::string& why) { KFORGE_THROW(worker, "{}:{}: launch {}: {}", file, l.line, l.kernel, why); };
    try {
      for (int d = 0; d < 3; ++d) r.grid[d] = l.grid[d].evaluate(a), r.block[d] = l.block[d].evaluate(a);
      r.smem = l.smem.evaluate(a);
      for (const auto& arg : l.args) {
        if (arg.what == launch_arg::kind::integer) {
          r.params.push_back(static_cast<std::uint64_t>(arg.value.evaluate(a)));
        } else {
          const void* p = arg.what == launch_arg::kind::workspace ? a.workspace : tensor_at(a, arg.slot).data;
          r.params.push_back(reinterpret_cast<std::uintptr_t>(p));
        }
      }
    } catch (const kforge::error& e) {
      fail(e.what());
    }
    // CUDA's limits: a launch outside them would fail anyway; say which expression is wrong.
    static constexpr std::int64_t grid_max[3] = {2147483647, 65535, 65535}, block_max[3] = {1024, 1024, 64};
    static constexpr char axis[3] = {'x', 'y', 'z'};
    for (int d = 0; d < 3; ++d) {
      if (r.grid[d] < 1 || r.grid[d] > grid_max[d])
        fail(fmt::format("grid.{} = {} (from '{}'), outside 1..{}", axis[d], r.grid[d], l.grid[d].text(), grid_max[d]));
      if (r.block[d] < 1 || r.block[d] > block_max[d])
        fail(fmt::format("block.{} = {} (from '{}'), outside 1..{}", axis[d], r.block[d], l.block[d].text(),
                         block_max[d]));
    }
    if (r.block[0] * r.block[1] * r.block[2] > 1024)
      fail(fmt::format("{} threads per block, more than 1024", r.block[0] * r.block[1] * r.block[2]));
    if (r.smem < 0) fail(fmt::format("shared memory {} bytes (from '{}')", r.smem, l.smem.text()));
    out.push_back(std::move(r));
  }
  return out;
}

std::size_t launch_plan::workspace_bytes(const kf_args& a) const {
  if (!has_workspace) return 0;
  const auto v = workspace.evaluate(a);
  if (v < 0) KFORGE_THROW(worker, "{}: workspace '{}' is {} bytes", file, workspace.text(), v);
  return static_cast<std::size_t>(v);
}

nlohmann::json launch_plan::to_json() const {
  nlohmann::json j = {{"file", file}, {"real", static_cast<int>(real)}, {"launches", nlohmann::json::array()}};
  if (has_workspace) j["workspace"] = workspace.text();
  for (const auto& l : launches) {
    nlohmann::json lj = {{"kernel", l.kernel}, {"lowered", l.lowered}, {"line", l.line}, {"smem", l.smem.text()}};
    for (int d = 0; d < 3; ++d) lj["grid"].push_back(l.grid[d].text()), lj["block"].push_back(l.block[d].text());
    lj["args"] = nlohmann::json::array();
    for (const auto& a : l.args) {
      if (a.what == launch_arg::kind::tensor) lj["args"].push_back({{"tensor", a.tensor}});
      else if (a.what == launch_arg::kind::workspace) lj["args"].push_back({{"workspace", true}});
      else lj["args"].push_back({{"integer", a.value.text()}});
    }
    j["launches"].push_back(std::move(lj));
  }
  return j;
}

launch_plan launch_plan::from_json(const nlohmann::json& j) {
  launch_plan p;
  p.file = j.at("file");
  p.real = static_cast<kf_dtype>(j.at("real").get<int>());
  if (j.contains("workspace")) p.has_workspace = true, p.workspace = shape_expr::parse(j["workspace"].get<std::string>(), p.real);
  for (const auto& lj : j.at("launches")) {
    launch l;
    l.kernel = lj.at("kernel");
    l.lowered = lj.value("lowered", "");
    l.line = lj.value("line", 0);
    for (int d = 0; d < 3; ++d) {
      l.grid[d] = shape_expr::parse(lj.at("grid")[d].get<std::string>(), p.real);
      l.block[d] = shape_expr::parse(lj.at("block")[d].get<std::string>(), p.real);
    }
    l.smem = shape_expr::parse(lj.at("smem").get<std::string>(), p.real);
    for (const auto& aj : lj.at("args")) {
      launch_arg a;
      if (aj.contains("tensor")) a.what = launch_arg::kind::tensor, a.tensor = aj["tensor"];
      else if (aj.contains("workspace")) a.what = launch_arg::kind::workspace;
      else a.what = launch_arg::kind::integer, a.value = shape_expr::parse(aj.at("integer").get<std::string>(), p.real);
      l.args.push_back(std::move(a));
    }
    p.launches.push_back(std::move(l));
  }
  return p;
}

} // namespace kforge::build
