#include "propose/template.hpp"
#include "core/text.hpp"

#include "core/error.hpp"
#include "core/fs.hpp"

#include <algorithm>
#include <cmath>
#include <set>
#include <string_view>
#include <vector>

namespace kforge::propose {
namespace {

using nlohmann::json;

enum class node_kind { text, variable, section, inverted, partial };

struct node {
  node_kind kind = node_kind::text;
  std::string text;              // text: the literal; partial: its name; others: the name as written
  std::vector<std::string> path; // variable, section, inverted: the dotted name split; empty for "."
  int line = 0;                  // of the tag, 1-based
  std::string indent;            // standalone partial: the whitespace before its tag
  std::vector<node> children;    // section, inverted
};

struct parsed {
  std::string file; // as shown in errors
  std::vector<node> nodes;
};

bool is_blank(std::string_view s) {
  return std::all_of(s.begin(), s.end(), [](char c) { return c == ' ' || c == '\t' || c == '\r'; });
}


bool is_name_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-'; }

/// "a.b.c" -> {a, b, c}; "." -> {}. Throws on anything else.
std::vector<std::string> split_name(std::string_view name, const std::string& file, int line) {
  if (name.empty()) KFORGE_THROW(usage, "{}:{}: empty tag: a tag needs a name", file, line);
  if (name == ".") return {};
  std::vector<std::string> parts;
  std::size_t start = 0;
  while (true) {
    const auto dot = name.find('.', start);
    const auto part = name.substr(start, dot == std::string_view::npos ? std::string_view::npos : dot - start);
    if (part.empty() || !std::all_of(part.begin(), part.end(), is_name_char))
      KFORGE_THROW(usage,
                   "{}:{}: bad name '{}' in a tag (a name is letters, digits, '_' and '-', parts joined by '.', "
                   "or '.' alone)",
                   file, line, name);
    parts.emplace_back(part);
    if (dot == std::string_view::npos) break;
    start = dot + 1;
  }
  return parts;
}

bool valid_template_name(std::string_view name) {
  return !name.empty() && name.front() != '.' &&
         std::all_of(name.begin(), name.end(), [](char c) { return is_name_char(c) || c == '.'; });
}

std::vector<node> parse(std::string_view src, const std::string& file) {
  std::vector<node> root;
  std::vector<node> open; // sections being built; their children collect in open.back()
  auto out = [&]() -> std::vector<node>& { return open.empty() ? root : open.back().children; };

  std::size_t pos = 0, line_start = 0, text_start = 0;
  int line = 1;
  auto advance_to = [&](std::size_t p) {
    for (; pos < p; ++pos)
      if (src[pos] == '\n') {
        ++line;
        line_start = pos + 1;
      }
  };
  auto emit_text = [&](std::size_t from, std::size_t to) {
    if (to > from) out().push_back(node{.kind = node_kind::text, .text = std::string(src.substr(from, to - from))});
  };

  while (true) {
    const std::size_t open_at = src.find("{{", pos);
    if (open_at == std::string_view::npos) {
      emit_text(text_start, src.size());
      break;
    }
    advance_to(open_at);
    const int tag_line = line;
    const bool triple = open_at + 2 < src.size() && src[open_at + 2] == '{';
    const std::size_t inner_at = open_at + (triple ? 3 : 2);
    const std::size_t close_at = src.find(triple ? "}}}" : "}}", inner_at);
    if (close_at == std::string_view::npos)
      KFORGE_THROW(usage, "{}:{}: '{}' is never closed with '{}'", file, tag_line, triple ? "{{{" : "{{",
                   triple ? "}}}" : "}}");
    const std::size_t tag_end = close_at + (triple ? 3 : 2);
    std::string_view inner = src.substr(inner_at, close_at - inner_at);
    char sigil = 0;
    if (!triple) {
      const auto t = trim(inner);
      if (!t.empty() && std::string_view("#^/>!&").find(t.front()) != std::string_view::npos) {
        sigil = t.front();
        inner = t.substr(1);
      }
    }
    inner = trim(inner);

    // Standalone: a block tag alone on its line takes the whole line with it.
    bool standalone = false;
    std::size_t resume = tag_end;
    if (sigil == '#' || sigil == '^' || sigil == '/' || sigil == '>' || sigil == '!') {
      std::size_t e = tag_end;
      while (e < src.size() && (src[e] == ' ' || src[e] == '\t' || src[e] == '\r')) ++e;
      if (is_blank(src.substr(line_start, open_at - line_start)) && (e == src.size() || src[e] == '\n')) {
        standalone = true;
        resume = e == src.size() ? e : e + 1;
      }
    }
    emit_text(text_start, standalone ? line_start : open_at);

    switch (sigil) {
    case '!':
      if (inner.find("{{") != std::string_view::npos)
        KFORGE_THROW(usage, "{}:{}: a comment cannot hold '{{{{': the comment ends at the first '}}}}'", file, tag_line);
      break;
    case '#':
    case '^':
      open.push_back(node{.kind = sigil == '#' ? node_kind::section : node_kind::inverted,
                          .text = std::string(inner),
                          .path = split_name(inner, file, tag_line),
                          .line = tag_line});
      break;
    case '/': {
      if (open.empty())
        KFORGE_THROW(usage, "{}:{}: '{{{{/{}}}}}' closes a section that is not open", file, tag_line, inner);
      if (open.back().text != inner)
        KFORGE_THROW(usage, "{}:{}: '{{{{/{}}}}}' does not match the open section '{{{{{}{}}}}}' from line {}", file,
                     tag_line, inner, open.back().kind == node_kind::section ? '#' : '^', open.back().text,
                     open.back().line);
      node done = std::move(open.back());
      open.pop_back();
      out().push_back(std::move(done));
      break;
    }
    case '>':
      if (!valid_template_name(inner))
        KFORGE_THROW(usage, "{}:{}: bad partial name '{}' (letters, digits, '_', '-', '.'; same directory)", file,
                     tag_line, inner);
      out().push_back(node{.kind = node_kind::partial,
                           .text = std::string(inner),
                           .line = tag_line,
                           .indent = standalone ? std::string(src.substr(line_start, open_at - line_start)) : ""});
      break;
    default: // 0, '&', or a triple mustache: a variable
      out().push_back(node{.kind = node_kind::variable,
                           .text = std::string(inner),
                           .path = split_name(inner, file, tag_line),
                           .line = tag_line});
      break;
    }
    advance_to(resume);
    text_start = resume;
  }
  if (!open.empty())
    KFORGE_THROW(usage, "{}:{}: section '{{{{{}{}}}}}' is never closed (no '{{{{/{}}}}}')", file, open.back().line,
                 open.back().kind == node_kind::section ? '#' : '^', open.back().text, open.back().text);
  return root;
}

bool truthy(const json* v) {
  if (!v || v->is_null()) return false;
  if (v->is_boolean()) return v->get<bool>();
  if (v->is_string()) return !v->get_ref<const std::string&>().empty();
  if (v->is_array() || v->is_object()) return !v->empty();
  return true; // numbers
}

std::string keys_of(const json& j) {
  if (!j.is_object()) return std::string("it is ") + j.type_name() + ", not an object";
  std::string s;
  for (auto it = j.begin(); it != j.end(); ++it) s += (s.empty() ? "" : ", ") + it.key();
  return s.empty() ? "it has no names" : "it has: " + s;
}

class renderer {
public:
  renderer(const template_set& set, const json& root) : m_set(set) { m_stack.push_back(&root); }

  void render_template(const std::string& name, std::string& out, const std::string& from_file, int from_line) {
    const auto path = m_set.path_of(name);
    if (m_chain.size() > static_cast<std::size_t>(m_set.options().max_partial_depth)) {
      std::string chain;
      for (auto& c : m_chain) chain += c + " > ";
      KFORGE_THROW(usage, "{}:{}: partials nested deeper than {} ({}{}): does a partial include itself?", from_file,
                   from_line, m_set.options().max_partial_depth, chain, name);
    }
    if (!std::filesystem::is_regular_file(path)) {
      if (from_file.empty()) {
        std::set<std::string> have;
        std::error_code ec;
        for (auto& e : std::filesystem::directory_iterator(m_set.dir(), ec))
          if (e.path().extension() == ".md") have.insert(e.path().stem().string());
        std::string list;
        for (auto& h : have) list += (list.empty() ? "" : ", ") + h;
        KFORGE_THROW(usage, "no template '{}': {} does not exist (templates in {}: {})", name, path.string(),
                     m_set.dir().string(), list.empty() ? "none" : list);
      }
      KFORGE_THROW(usage, "{}:{}: partial '{}' not found: {} does not exist", from_file, from_line, name,
                   path.string());
    }
    parsed t{path.string(), {}};
    t.nodes = parse(read_file(path), t.file);
    m_chain.push_back(name);
    render_nodes(t, t.nodes, out);
    m_chain.pop_back();
  }

private:
  const template_set& m_set;
  std::vector<const json*> m_stack;  // innermost last
  std::vector<std::string> m_chain; // templates being rendered, outermost first

  /// @return the value, or null when not found; `why` says what was missing.
  const json* lookup(const std::vector<std::string>& path, std::string* why) const {
    if (path.empty()) return m_stack.back();
    const json* v = nullptr;
    for (auto it = m_stack.rbegin(); it != m_stack.rend(); ++it)
      if ((*it)->is_object()) {
        auto f = (*it)->find(path[0]);
        if (f != (*it)->end()) {
          v = &*f;
          break;
        }
      }
    if (!v) {
      if (why) *why = "no '" + path[0] + "' in scope (the innermost context: " + keys_of(*m_stack.back()) + ")";
      return nullptr;
    }
    for (std::size_t i = 1; i < path.size(); ++i) {
      const json* next = nullptr;
      if (v->is_object()) {
        auto f = v->find(path[i]);
        if (f != v->end()) next = &*f;
      }
      if (!next) {
        if (why) *why = "'" + path[i - 1] + "' has no '" + path[i] + "'; " + keys_of(*v);
        return nullptr;
      }
      v = next;
    }
    return v;
  }

  static std::string where(const parsed& t, int line) { return fmt::format("{}:{}", t.file, line); }

  std::string chain_note() const {
    if (m_chain.size() < 2) return "";
    std::string c;
    for (auto& n : m_chain) c += (c.empty() ? "" : " > ") + n;
    return " (rendering " + c + ")";
  }

  void render_nodes(const parsed& t, const std::vector<node>& nodes, std::string& out) {
    for (const node& n : nodes) {
      switch (n.kind) {
      case node_kind::text: out += n.text; break;
      case node_kind::variable: {
        std::string why;
        const json* v = lookup(n.path, &why);
        if (!v) {
          if (m_set.options().strict)
            KFORGE_THROW(usage, "{}: unknown variable '{}': {}{}", where(t, n.line), n.text, why, chain_note());
          break;
        }
        out += template_text(*v);
        break;
      }
      case node_kind::section: {
        const json* v = lookup(n.path, nullptr);
        if (!truthy(v)) break;
        if (v->is_array()) {
          for (const json& e : *v) {
            m_stack.push_back(&e);
            render_nodes(t, n.children, out);
            m_stack.pop_back();
          }
        } else if (v->is_boolean()) {
          render_nodes(t, n.children, out);
        } else {
          m_stack.push_back(v);
          render_nodes(t, n.children, out);
          m_stack.pop_back();
        }
        break;
      }
      case node_kind::inverted:
        if (!truthy(lookup(n.path, nullptr))) render_nodes(t, n.children, out);
        break;
      case node_kind::partial: {
        if (n.indent.empty()) {
          render_template(n.text, out, t.file, n.line);
          break;
        }
        std::string inner;
        render_template(n.text, inner, t.file, n.line);
        for (std::size_t i = 0; i < inner.size(); ++i) {
          if (i == 0 || inner[i - 1] == '\n') out += n.indent;
          out += inner[i];
        }
        break;
      }
      }
    }
  }
};

} // namespace

std::string template_text(const json& v) {
  switch (v.type()) {
  case json::value_t::null: return "";
  case json::value_t::string: return v.get<std::string>();
  case json::value_t::boolean: return v.get<bool>() ? "true" : "false";
  case json::value_t::number_integer: return std::to_string(v.get<std::int64_t>());
  case json::value_t::number_unsigned: return std::to_string(v.get<std::uint64_t>());
  case json::value_t::number_float: {
    const double d = v.get<double>();
    if (std::isfinite(d) && d == std::floor(d) && std::fabs(d) < 1e15) return fmt::format("{:.0f}", d);
    return fmt::format("{:.6g}", d);
  }
  default: return v.dump();
  }
}

template_set::template_set(std::filesystem::path dir, template_options opts)
    : m_dir(std::move(dir)), m_opts(opts) {
  if (!std::filesystem::is_directory(m_dir))
    KFORGE_THROW(usage, "prompt templates: {} is not a directory (set KFORGE_PROMPTS to the folder holding system.md)",
                 m_dir.string());
}

std::filesystem::path template_set::path_of(const std::string& name) const { return m_dir / (name + ".md"); }

std::string template_set::render(const std::string& name, const nlohmann::json& context) const {
  if (!valid_template_name(name))
    KFORGE_THROW(usage, "bad template name '{}' (letters, digits, '_', '-', '.'; no directories)", name);
  renderer r(*this, context);
  std::string out;
  r.render_template(name, out, "", 0);
  return out;
}

} // namespace kforge::propose
