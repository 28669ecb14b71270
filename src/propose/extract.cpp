// Answer -> candidate source: a line scanner for markdown fences, a classifier for blocks,
// SEARCH/REPLACE and unified-diff application with whitespace-tolerant matching, and header
// inlining. Everything returns values; the one try/catch at the top turns a bug into ok=false.
#include "propose/extract.hpp"

#include "build/compiler.hpp"
#include "build/launch_plan.hpp"
#include "core/text.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <optional>
#include <set>

namespace kforge::propose {
namespace {

using lines_t = std::vector<std::string>;

// ---- text helpers ------------------------------------------------------------------------


std::string_view leading_ws(std::string_view s) { return s.substr(0, std::min(s.size(), s.find_first_not_of(" \t"))); }

std::string lower(std::string_view s) {
  std::string r(s);
  for (auto& c : r) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return r;
}

bool starts_with_ci(std::string_view s, std::string_view prefix) {
  return s.size() >= prefix.size() && lower(s.substr(0, prefix.size())) == prefix;
}

bool is_ident_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }

lines_t split_lines(std::string_view s) {
  lines_t out;
  std::size_t pos = 0;
  for (;;) {
    const auto end = s.find('\n', pos);
    if (end == std::string_view::npos) {
      out.emplace_back(s.substr(pos));
      return out;
    }
    out.emplace_back(s.substr(pos, end - pos));
    pos = end + 1;
  }
}

std::string join_lines(const lines_t& lines, std::size_t from = 0, std::size_t to = std::string::npos) {
  std::string s;
  to = std::min(to, lines.size());
  for (auto i = from; i < to; ++i) s += (i > from ? "\n" : "") + lines[i];
  return s;
}

// One line of a quote for an error message.
std::string quote(std::string_view s, std::size_t max = 80) {
  std::string t(trim(s));
  if (t.size() > max) t = t.substr(0, max - 3) + "...";
  return "\"" + t + "\"";
}

// Drops a byte-order mark and turns CRLF (and lone CR) into LF.
std::string normalize(std::string_view s, bool& had_cr) {
  if (s.substr(0, 3) == "\xEF\xBB\xBF") s.remove_prefix(3);
  std::string out;
  out.reserve(s.size());
  had_cr = false;
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '\r') {
      had_cr = true;
      if (i + 1 < s.size() && s[i + 1] == '\n') continue;
      out += '\n';
    } else {
      out += s[i];
    }
  }
  return out;
}

// ---- file names and languages ----------------------------------------------------------------

const std::set<std::string>& c_extensions() {
  static const std::set<std::string> e = {"cu", "cuh", "cpp", "cc", "cxx", "c", "h", "hpp", "hh", "hxx", "inl"};
  return e;
}

std::string extension(std::string_view name) {
  const auto dot = name.rfind('.');
  return dot == std::string_view::npos ? std::string() : lower(name.substr(dot + 1));
}

bool is_filename(std::string_view s) {
  static const std::set<std::string> other = {"py", "sh", "diff", "patch", "txt", "md", "json", "toml", "yaml", "yml",
                                              "cmake", "ptx"};
  if (s.empty() || s.front() == '.' || s.back() == '.' || s.find('.') == std::string_view::npos) return false;
  if (!std::all_of(s.begin(), s.end(), [](char c) { return is_ident_char(c) || c == '.' || c == '/' || c == '-'; }))
    return false;
  const auto ext = extension(s);
  return c_extensions().count(ext) || other.count(ext);
}

std::string basename(std::string_view path) {
  const auto slash = path.rfind('/');
  return std::string(slash == std::string_view::npos ? path : path.substr(slash + 1));
}

// A file name announced on the line before a fence: "kernel.cu:", "**kernel.cu**",
// "### kernel.cu", "File: kernel.cu", "Here is the updated `softmax.cuh`:".
std::string label_file(std::string_view line) {
  auto strip = [](std::string_view s) {
    for (;;) {
      const auto before = s.size();
      s = trim(s);
      while (!s.empty() && (s.front() == '#' || s.front() == '>' || s.front() == '*' || s.front() == '_' ||
                            s.front() == '`' || s.front() == '-'))
        s.remove_prefix(1);
      while (!s.empty() && (s.back() == ':' || s.back() == '*' || s.back() == '_' || s.back() == '`')) s.remove_suffix(1);
      if (s.size() == before) return s;
    }
  };
  auto s = strip(line);
  for (std::string_view prefix : {"file name:", "filename:", "file:", "path:"})
    if (starts_with_ci(s, prefix)) s = strip(s.substr(prefix.size()));
  if (is_filename(s)) return std::string(s);
  // One `file.ext` in backticks: "Here is the updated `softmax.cuh`:".
  const auto t = trim(line);
  std::string found;
  int count = 0;
  for (std::size_t a = t.find('`'); a != std::string_view::npos;) {
    const auto b = t.find('`', a + 1);
    if (b == std::string_view::npos) break;
    if (const auto tok = t.substr(a + 1, b - a - 1); is_filename(tok)) found = tok, ++count;
    a = t.find('`', b + 1);
  }
  if (count == 1) return found;
  // A short line ending in a file name: "### Step 2: kernel.cu", "Save this as kernel.cu:".
  const auto words = std::count(t.begin(), t.end(), ' ') + 1;
  auto last = strip(t.substr(t.find_last_of(' ') == std::string_view::npos ? 0 : t.find_last_of(' ') + 1));
  while (!last.empty() && (last.back() == '.' || last.back() == ',' || last.back() == ')')) last.remove_suffix(1);
  return words <= 8 && is_filename(last) ? std::string(last) : std::string();
}

// The info string: "cuda", "cpp kernel.cpp", "cu:kernel.cu", "cuda title=\"kernel.cu\"",
// "{.cpp}", "kernel.cu".
void parse_info(std::string_view info, std::string& tag, std::string& file) {
  std::vector<std::string> words;
  std::string cur;
  for (char c : info) {
    if (std::isspace(static_cast<unsigned char>(c))) {
      if (!cur.empty()) words.push_back(std::move(cur)), cur.clear();
    } else {
      cur += c;
    }
  }
  if (!cur.empty()) words.push_back(std::move(cur));
  for (auto& w : words) {
    while (!w.empty() && (w.front() == '{' || w.front() == '.')) w.erase(0, 1);
    while (!w.empty() && (w.back() == '}' || w.back() == ',')) w.pop_back();
  }
  tag.clear();
  file.clear();
  for (std::size_t i = 0; i < words.size(); ++i) {
    const auto& w = words[i];
    if (const auto eq = w.find('='); eq != std::string::npos) {
      const auto key = lower(w.substr(0, eq));
      auto value = w.substr(eq + 1);
      if (value.size() >= 2 && (value.front() == '"' || value.front() == '\'')) value = value.substr(1, value.size() - 2);
      if ((key == "title" || key == "file" || key == "filename" || key == "name" || key == "path") && is_filename(value))
        file = value;
    } else if (i == 0) {
      const auto colon = w.find(':');
      tag = lower(w.substr(0, colon));
      if (colon != std::string::npos && is_filename(w.substr(colon + 1))) file = w.substr(colon + 1);
      if (is_filename(w)) file = w, tag = extension(w);
    } else if (file.empty() && is_filename(w)) {
      file = w;
    }
  }
}

// A first-line comment naming the file: "// file: kernel.cu", "// kernel.cu", "/* kernel.cuh */".
std::string comment_file(std::string_view body) {
  const auto first = trim(body.substr(0, body.find('\n', body.find_first_not_of(" \t\n"))));
  std::string_view c;
  if (first.substr(0, 2) == "//") {
    c = trim(first.substr(2));
  } else if (first.substr(0, 2) == "/*") {
    c = first.substr(2);
    if (const auto end = c.find("*/"); end != std::string_view::npos) c = c.substr(0, end);
    c = trim(c);
  } else if (first.substr(0, 2) == "# ") {
    c = trim(first.substr(2));
  } else {
    return {};
  }
  for (std::string_view prefix : {"file name:", "filename:", "file:", "path:"})
    if (starts_with_ci(c, prefix)) c = trim(c.substr(prefix.size()));
  return is_filename(c) ? std::string(c) : std::string();
}

bool run_of(std::string_view t, char ch, std::size_t lo, std::size_t hi, std::size_t& n) {
  n = 0;
  while (n < t.size() && t[n] == ch) ++n;
  return n >= lo && n <= hi;
}

bool is_search_marker(std::string_view line) {
  const auto t = trim(line);
  std::size_t n = 0;
  return run_of(t, '<', 5, 9, n) && trim(t.substr(n)) == "SEARCH";
}
bool is_divider(std::string_view line) {
  const auto t = trim(line);
  std::size_t n = 0;
  return run_of(t, '=', 5, 9, n) && n == t.size();
}
bool is_replace_marker(std::string_view line) {
  const auto t = trim(line);
  std::size_t n = 0;
  if (!run_of(t, '>', 5, 9, n)) return false;
  const auto word = trim(t.substr(n));
  return word == "REPLACE" || word == "UPDATED";
}

bool looks_like_diff(const lines_t& lines) {
  for (std::size_t i = 0; i < lines.size(); ++i) {
    if (lines[i].rfind("@@ -", 0) == 0) return true;
    if (lines[i].rfind("--- ", 0) == 0 && i + 1 < lines.size() && lines[i + 1].rfind("+++ ", 0) == 0) return true;
  }
  return false;
}

// What an unlabelled block is, from its lines: "c", "python", "bash", "diff" or "text".
std::string sniff(std::string_view body) {
  const auto lines = split_lines(body);
  if (looks_like_diff(lines)) return "diff";
  int c = 0, py = 0, sh = 0;
  static const std::set<std::string> shell_words = {"nvcc", "g++", "gcc", "clang++", "kforge", "pip", "pip3", "python",
                                                    "python3", "cd", "make", "cmake", "export", "ls", "mkdir", "git"};
  static constexpr std::string_view preprocessor[] = {"include", "define", "pragma", "if", "endif", "else", "undef"};
  for (const auto& raw : lines) {
    const auto t = trim(raw);
    if (t.empty()) continue;
    const auto first = std::string(t.substr(0, t.find(' ')));
    if (t.front() == '#') {
      const auto d = trim(t.substr(1));
        const bool directive = std::any_of(std::begin(preprocessor), std::end(preprocessor),
                                         [&](std::string_view w) { return d.rfind(w, 0) == 0; });
      if (directive) c += 2;
      else ++py, ++sh; // a script comment
      continue;
    }
    if (t.back() == ';' || t.back() == '{' || t.back() == '}' || t.substr(0, 2) == "//" || t.substr(0, 2) == "/*" ||
        t.find("__global__") != std::string_view::npos)
      ++c;
    if ((first == "def" || first == "class" || first == "elif" || first == "with" || first == "for" || first == "if") &&
        t.back() == ':')
      py += 2;
    if (first == "import" || (first == "from" && t.find(" import ") != std::string_view::npos) || t.rfind("print(", 0) == 0)
      py += 2;
    if (t.rfind("$ ", 0) == 0 || shell_words.count(first) || t.rfind("./", 0) == 0) sh += 2;
  }
  if (c > 0 && c >= py && c >= sh) return "c";
  if (py > 0 && py >= sh) return "python";
  if (sh > 0) return "bash";
  return "text";
}

std::string classify(const code_block& b, const std::string& tag) {
  for (const auto& line : split_lines(b.body))
    if (is_search_marker(line)) return "edits";
  static const std::set<std::string> c_tags = {"cuda", "cu", "cuh", "cpp", "c++", "cc", "cxx", "c", "h", "hpp", "hh",
                                               "hxx", "cuda-c", "cuda-cpp", "cudacpp", "cuda-c++"};
  static const std::set<std::string> text_tags = {"", "text", "txt", "plaintext", "plain", "code", "none", "source"};
  static const std::map<std::string, std::string> aliases = {
      {"py", "python"}, {"python3", "python"}, {"sh", "bash"}, {"shell", "bash"}, {"console", "bash"},
      {"zsh", "bash"},  {"shell-session", "bash"}, {"patch", "diff"}, {"udiff", "diff"}, {"md", "markdown"}};
  if (c_tags.count(tag)) return "c";
  if (text_tags.count(tag)) {
    // A C file name decides unless the lines say otherwise ("nvcc kernel.cu:" before a shell block).
    const auto sniffed = sniff(b.body);
    if (!b.file.empty() && c_extensions().count(extension(b.file)) && sniffed == "text") return "c";
    return sniffed;
  }
  if (const auto it = aliases.find(tag); it != aliases.end()) return it->second;
  return tag;
}

// ---- scanning ----------------------------------------------------------------------------

struct fence {
  char ch = '`';
  std::size_t len = 0, indent = 0;
  std::string info;
};

std::optional<fence> opening_fence(std::string_view line) {
  std::size_t i = 0;
  while (i < line.size() && (line[i] == ' ' || line[i] == '\t')) ++i;
  if (i >= line.size() || (line[i] != '`' && line[i] != '~')) return std::nullopt;
  const char ch = line[i];
  auto j = i;
  while (j < line.size() && line[j] == ch) ++j;
  if (j - i < 3) return std::nullopt;
  const auto info = trim(line.substr(j));
  if (ch == '`' && info.find('`') != std::string_view::npos) return std::nullopt; // inline code, not a fence
  return fence{ch, j - i, i, std::string(info)};
}

bool closes(std::string_view line, const fence& f) {
  std::size_t i = 0;
  while (i < line.size() && (line[i] == ' ' || line[i] == '\t')) ++i;
  auto j = i;
  while (j < line.size() && line[j] == f.ch) ++j;
  return j - i >= f.len && trim(line.substr(j)).empty();
}

struct scanned {
  std::vector<code_block> blocks;
  std::string prose;
};

// Splits an answer into fenced blocks (kind and file not yet known) and prose.
scanned scan_fences(std::string_view text) {
  scanned out;
  const auto lines = split_lines(text);
  std::string prose;
  std::optional<fence> open;
  code_block cur;
  int prev_prose = -10;        // index of the last non-blank prose line
  std::string prev_label;      // a file name that line announced
  for (std::size_t i = 0; i < lines.size(); ++i) {
    const auto& line = lines[i];
    const int no = static_cast<int>(i) + 1;
    if (open) {
      if (closes(line, *open)) {
        open.reset();
        cur.closed = true;
        out.blocks.push_back(std::move(cur));
        cur = {};
      } else {
        // Strip the fence's own indentation from its lines (a fence inside a list item).
        std::size_t k = 0;
        while (k < open->indent && k < line.size() && (line[k] == ' ' || line[k] == '\t')) ++k;
        cur.body += line.substr(k);
        cur.body += '\n';
      }
      continue;
    }
    if (auto f = opening_fence(line)) {
      open = f;
      cur = {};
      cur.line = no;
      cur.info = f->info;
      cur.closed = false;
      if (prev_prose >= static_cast<int>(i) - 2) cur.file = prev_label; // "kernel.cu:" then (a blank line and) the fence
      continue;
    }
    if (is_search_marker(line)) { // SEARCH/REPLACE written outside any fence
      code_block b;
      b.line = no;
      b.kind = "edits";
      b.closed = true;
      for (; i < lines.size(); ++i) {
        b.body += lines[i] + "\n";
        if (is_replace_marker(lines[i])) break;
      }
      out.blocks.push_back(std::move(b));
      continue;
    }
    if (!trim(line).empty()) {
      prose += line + "\n";
      prev_prose = static_cast<int>(i);
      prev_label = label_file(line);
    } else if (!prose.empty() && prose.substr(prose.size() - std::min<std::size_t>(2, prose.size())) != "\n\n") {
      prose += "\n"; // one blank line where blocks were taken out, not a run of them
    }
  }
  if (open) out.blocks.push_back(std::move(cur)); // closed=false: the answer ends inside it
  out.prose = std::string(trim(prose));
  return out;
}

scanned scan(std::string_view text, int depth = 0) {
  scanned raw = scan_fences(text);
  scanned out;
  out.prose = raw.prose;
  for (auto& b : raw.blocks) {
    std::string tag;
    if (b.kind != "edits") {
      std::string info_file;
      parse_info(b.info, tag, info_file);
      if (!info_file.empty()) b.file = info_file;
      if (b.file.empty()) b.file = comment_file(b.body);
      b.kind = classify(b, tag);
    }
    if (b.kind == "markdown" && b.closed && depth < 4) {
      auto inner = scan(b.body, depth + 1);
      for (auto& ib : inner.blocks) ib.line += b.line, out.blocks.push_back(std::move(ib));
      if (!inner.prose.empty()) out.prose += (out.prose.empty() ? "" : "\n") + inner.prose;
      continue;
    }
    out.blocks.push_back(std::move(b));
  }
  for (std::size_t i = 0; i < out.blocks.size(); ++i) out.blocks[i].index = static_cast<int>(i) + 1;
  return out;
}

// ---- what a source is --------------------------------------------------------------------------

// Whether `s` defines kf_forward: "kf_forward(...)" followed by "{".
bool defines_kf_forward(std::string_view s) {
  for (auto pos = s.find("kf_forward"); pos != std::string_view::npos; pos = s.find("kf_forward", pos + 1)) {
    auto i = pos + 10;
    if ((pos > 0 && is_ident_char(s[pos - 1])) || (i < s.size() && is_ident_char(s[i]))) continue;
    while (i < s.size() && std::isspace(static_cast<unsigned char>(s[i]))) ++i;
    if (i >= s.size() || s[i] != '(') continue;
    int depth = 0;
    for (; i < s.size(); ++i) {
      if (s[i] == '(') ++depth;
      else if (s[i] == ')' && --depth == 0) break;
    }
    ++i;
    while (i < s.size() && std::isspace(static_cast<unsigned char>(s[i]))) ++i;
    if (s.substr(i, 8) == "noexcept") i += 8;
    while (i < s.size() && std::isspace(static_cast<unsigned char>(s[i]))) ++i;
    if (i < s.size() && s[i] == '{') return true;
  }
  return false;
}

bool is_main(std::string_view s) { return defines_kf_forward(s) || build::declares_launches(s); }

std::string main_reason(std::string_view s) {
  return defines_kf_forward(s) ? "defines kf_forward" : "declares // kforge: launch";
}

// The first CUDA construct of `s` outside comment-only lines, or "".
std::string cuda_construct(std::string_view s) {
  for (const auto& line : split_lines(s)) {
    const auto t = trim(line);
    if (t.substr(0, 2) == "//" || t.substr(0, 1) == "*" || t.substr(0, 2) == "/*") continue;
    for (std::string_view w : {"__global__", "__device__", "__shared__", "<<<", "threadIdx", "blockIdx", "cudaStream_t",
                               "cudaMalloc", "#include <cuda", "#include \"cuda"})
      if (t.find(w) != std::string_view::npos) return std::string(w);
  }
  return {};
}

// Whether the text's first line is code rather than prose ("Here is the kernel:").
bool starts_like_code(std::string_view text) {
  const auto t = trim(text);
  const auto first = trim(t.substr(0, t.find('\n')));
  if (first.empty()) return false;
  for (std::string_view w : {"#", "//", "/*", "template", "__", "extern", "static", "namespace", "using", "struct",
                             "typedef", "constexpr", "KF_EXPORT", "}"})
    if (first.substr(0, w.size()) == w) return true;
  return first.back() == ';' || first.back() == '{';
}

const char* const python_needs =
    "a Python candidate is one file that defines class ModelNew(torch.nn.Module), constructed like the problem's "
    "Model, whose forward(*inputs) returns the output tensor (or a tuple of them)";

const char* const abi_needs =
    "a candidate is one file that defines kf_forward (KF_EXPORT int kf_forward(const kf_args*), "
    "include/kforge/kernel.h) or, for a kernel-only CUDA candidate, declares its launches in "
    "'// kforge: launch KERNEL<<<grid, block>>>(args)' lines";

// ---- edits -------------------------------------------------------------------------------------

struct edit {
  lines_t search, replace;
  int block = 0;
  bool diff = false;
  long hint = -1; // diff: 0-based parent line the hunk says it starts at
};

std::string parse_search_replace(const code_block& b, std::vector<edit>& out) {
  enum { outside, in_search, in_replace } state = outside;
  edit e;
  e.block = b.index;
  auto lines = split_lines(b.body);
  if (!lines.empty() && lines.back().empty()) lines.pop_back();
  for (const auto& line : lines) {
    if (state == outside) {
      if (is_search_marker(line)) state = in_search; // anything else (a file name) is ignored
    } else if (state == in_search) {
      if (is_divider(line)) state = in_replace;
      else if (is_search_marker(line)) return fmt::format("block {}: a SEARCH section starts inside another one", b.index);
      else e.search.push_back(line);
    } else {
      if (is_replace_marker(line)) {
        out.push_back(std::move(e));
        e = {};
        e.block = b.index;
        state = outside;
      } else {
        e.replace.push_back(line);
      }
    }
  }
  if (state == in_search) return fmt::format("block {}: a SEARCH section has no '=======' line after it", b.index);
  if (state == in_replace)
    return fmt::format("block {}: a SEARCH/REPLACE edit has no '>>>>>>> REPLACE' line (was the answer cut off?)", b.index);
  return {};
}

std::string parse_diff(const code_block& b, std::vector<edit>& out) {
  auto lines = split_lines(b.body);
  if (!lines.empty() && lines.back().empty()) lines.pop_back();
  std::optional<edit> hunk;
  std::set<std::string> files;
  auto finish = [&] {
    if (hunk) out.push_back(std::move(*hunk));
    hunk.reset();
  };
  for (std::size_t i = 0; i < lines.size(); ++i) {
    const auto& line = lines[i];
    if (line.rfind("--- ", 0) == 0 && i + 1 < lines.size() && lines[i + 1].rfind("+++ ", 0) == 0) {
      finish();
      files.insert(std::string(trim(lines[i + 1].substr(4))));
      ++i;
      continue;
    }
    if (line.rfind("diff ", 0) == 0 || line.rfind("index ", 0) == 0) {
      finish();
      continue;
    }
    if (line.rfind("@@", 0) == 0) {
      finish();
      hunk = edit{};
      hunk->block = b.index;
      hunk->diff = true;
      long start = 0;
      if (std::sscanf(line.c_str(), "@@ -%ld", &start) == 1) hunk->hint = std::max(0L, start - 1);
      continue;
    }
    if (!hunk) continue; // text before the first hunk
    if (line.rfind("\\", 0) == 0) continue; // "\ No newline at end of file"
    const char c = line.empty() ? ' ' : line[0];
    const std::string rest = line.empty() ? std::string() : line.substr(1);
    if (c == '-') hunk->search.push_back(rest);
    else if (c == '+') hunk->replace.push_back(rest);
    else if (c == ' ') hunk->search.push_back(rest), hunk->replace.push_back(rest);
    else hunk->search.push_back(line), hunk->replace.push_back(line); // context that lost its leading space
  }
  finish();
  if (files.size() > 1) return fmt::format("block {}: the diff changes {} files; a candidate is one file", b.index, files.size());
  return {};
}

std::string strip(std::string_view s) { return std::string(trim(s)); }

std::vector<std::size_t> find_matches(const lines_t& text, const lines_t& search, bool loose) {
  std::vector<std::size_t> at;
  if (search.empty() || search.size() > text.size()) return at;
  for (std::size_t i = 0; i + search.size() <= text.size(); ++i) {
    bool ok = true;
    for (std::size_t k = 0; k < search.size() && ok; ++k)
      ok = loose ? strip(text[i + k]) == strip(search[k]) : text[i + k] == search[k];
    if (ok) at.push_back(i);
  }
  return at;
}

// Re-indents `replace` by the indentation difference between the parent's matched line and
// the SEARCH line, both the first non-blank ones.
lines_t reindent(lines_t replace, std::string_view search_line, std::string_view parent_line, bool& changed) {
  const auto s = leading_ws(search_line), p = leading_ws(parent_line);
  changed = false;
  if (s == p) return replace;
  if (p.substr(0, s.size()) == s) {
    const std::string add(p.substr(s.size()));
    for (auto& l : replace)
      if (!trim(l).empty()) l = add + l;
    changed = true;
  } else if (s.substr(0, p.size()) == p) {
    const auto remove = s.size() - p.size();
    for (auto& l : replace) {
      std::size_t k = 0;
      while (k < remove && k < l.size() && (l[k] == ' ' || l[k] == '\t')) ++k;
      l.erase(0, k);
    }
    changed = true;
  }
  return replace;
}

std::string apply_edits(lines_t& text, const std::vector<edit>& edits, std::vector<std::string>& notes) {
  long offset = 0; // lines added so far by diff hunks, to move their line hints
  for (std::size_t n = 0; n < edits.size(); ++n) {
    const auto& e = edits[n];
    const auto what = e.diff ? fmt::format("diff hunk {} of {} (block {})", n + 1, edits.size(), e.block)
                             : fmt::format("edit {} of {} (block {})", n + 1, edits.size(), e.block);
    // Blank lines at the edges of SEARCH locate nothing; drop them (and as many from REPLACE).
    lines_t search = e.search, replace = e.replace;
    while (!search.empty() && trim(search.front()).empty()) {
      search.erase(search.begin());
      if (!replace.empty() && trim(replace.front()).empty()) replace.erase(replace.begin());
    }
    while (!search.empty() && trim(search.back()).empty()) {
      search.pop_back();
      if (!replace.empty() && trim(replace.back()).empty()) replace.pop_back();
    }
    if (search.empty()) {
      if (e.diff && e.hint >= 0 && e.hint + offset <= static_cast<long>(text.size())) {
        const auto at = static_cast<std::size_t>(e.hint + offset);
        text.insert(text.begin() + static_cast<long>(at), replace.begin(), replace.end());
        offset += static_cast<long>(replace.size());
        continue;
      }
      return fmt::format("{}: the SEARCH section is empty; quote the parent's lines to replace, or the lines next to "
                         "where new code goes",
                         what);
    }
    auto at = find_matches(text, search, false);
    bool loose = false;
    if (at.empty()) at = find_matches(text, search, true), loose = !at.empty();
    if (at.size() > 1 && e.diff && e.hint >= 0) {
      // A diff says where: take the match nearest its (shifted) line number, as patch does.
      const long want = e.hint + offset;
      const auto best = *std::min_element(at.begin(), at.end(), [&](std::size_t a, std::size_t b) {
        return std::labs(static_cast<long>(a) - want) < std::labs(static_cast<long>(b) - want);
      });
      at = {best};
    }
    if (at.size() > 1) {
      std::string where;
      for (std::size_t k = 0; k < at.size() && k < 5; ++k) where += (k ? ", " : "") + std::to_string(at[k] + 1);
      return fmt::format("{}: the SEARCH text matches {} places in the parent (lines {}); it is ambiguous: quote more "
                         "lines around the change so it matches one",
                         what, at.size(), where);
    }
    if (at.empty()) {
      const auto& first = search.front();
      std::string closest;
      std::size_t best = std::string::npos;
      const auto f = strip(first);
      for (std::size_t i = 0; i < text.size(); ++i) {
        const auto t = strip(text[i]);
        if (t.empty() || (t.size() > 2 * f.size() + 8) || (f.size() > 2 * t.size() + 8)) continue;
        if (const auto d = edit_distance(f, t); d < best) best = d, closest = fmt::format("line {} {}", i + 1, quote(text[i]));
      }
      const bool near = best != std::string::npos && best <= std::max<std::size_t>(3, f.size() / 3);
      return fmt::format("{}: the SEARCH text is not in the parent source (it starts {}{}){}", what, quote(first),
                         search.size() > 1 ? fmt::format(", {} lines", search.size()) : "",
                         near ? fmt::format("; the closest parent line is {}", closest) : "");
    }
    if (loose) {
      std::size_t k = 0;
      while (k < search.size() && trim(search[k]).empty()) ++k;
      bool changed = false;
      replace = reindent(std::move(replace), search[k], text[at[0] + k], changed);
      notes.push_back(fmt::format("{} matched only when ignoring whitespace{}", what,
                                  changed ? "; its replacement was re-indented to the parent's" : ""));
    }
    text.erase(text.begin() + static_cast<long>(at[0]), text.begin() + static_cast<long>(at[0] + search.size()));
    text.insert(text.begin() + static_cast<long>(at[0]), replace.begin(), replace.end());
    offset += static_cast<long>(replace.size()) - static_cast<long>(search.size());
  }
  return {};
}

// ---- headers -----------------------------------------------------------------------------------

// `#include "name"` -> name, or "".
std::string quoted_include(std::string_view line) {
  auto t = trim(line);
  if (t.empty() || t.front() != '#') return {};
  t = trim(t.substr(1));
  if (t.substr(0, 7) != "include") return {};
  t = trim(t.substr(7));
  if (t.size() < 2 || t.front() != '"') return {};
  const auto close = t.find('"', 1);
  return close == std::string_view::npos ? std::string() : std::string(t.substr(1, close - 1));
}

struct inliner {
  std::map<std::string, const code_block*> headers; // basename -> block
  std::set<std::string> done;
  std::vector<std::string>& notes;
  std::set<std::string> unresolved;

  std::string run(const std::string& source, const std::string& from) {
    std::string out;
    const auto lines = split_lines(source);
    for (std::size_t i = 0; i < lines.size(); ++i) {
      const auto inc = quoted_include(lines[i]);
      const auto it = inc.empty() ? headers.end() : headers.find(basename(inc));
      if (it == headers.end()) {
        if (!inc.empty() && inc.find('/') == std::string::npos) unresolved.insert(inc);
        out += lines[i];
      } else if (done.count(it->first)) {
        out += fmt::format("// (\"{}\" is inlined above)", inc);
      } else {
        done.insert(it->first);
        std::string body;
        for (const auto& l : split_lines(it->second->body)) {
          const auto t = trim(l);
          if (t.rfind("#", 0) == 0 && trim(t.substr(1)) == "pragma once") continue;
          body += l + "\n";
        }
        while (!body.empty() && body.back() == '\n') body.pop_back();
        notes.push_back(fmt::format("inlined \"{}\" (block {}) where {} includes it", inc, it->second->index, from));
        out += fmt::format("// begin \"{}\" (inlined from the answer)\n{}\n// end \"{}\"", inc, run(body, "\"" + inc + "\""), inc);
      }
      if (i + 1 < lines.size()) out += '\n';
    }
    return out;
  }
};

extracted failure(extracted x, std::string why) {
  x.ok = false;
  x.error = std::move(why);
  x.source.clear();
  x.mode.clear();
  return x;
}

std::string kinds_of(const std::vector<const code_block*>& blocks) {
  std::map<std::string, int> count;
  for (const auto* b : blocks) ++count[b->kind];
  std::string s;
  for (const auto& [k, n] : count) s += (s.empty() ? "" : ", ") + (n > 1 ? fmt::format("{} {}", n, k) : k);
  return s;
}

extracted extract(std::string_view answer_in, std::string_view parent_in, const extract_options& opt) {
  extracted x;
  if (!opt.language.empty() && opt.language != "cuda" && opt.language != "cpp" && opt.language != "python")
    return failure(x, fmt::format("unknown candidate language '{}' (cuda, cpp or python)", opt.language));
  const bool python = opt.language == "python";
  const std::string lang = opt.language.empty() ? "C++/CUDA" : python ? "Python" : opt.language;
  // What makes a block the candidate: kf_forward or launch lines in C, class ModelNew in Python.
  const char* const needs = python ? python_needs : abi_needs;
  const char* const main_kind = python ? "python" : "c";
  bool crlf = false, parent_crlf = false;
  std::string answer = normalize(answer_in, crlf);
  const std::string parent = normalize(parent_in, parent_crlf);
  if (crlf) x.notes.push_back("the answer had CRLF line endings; the source has LF");

  // Reasoning models may put drafts in <think>...</think>: the answer is what follows.
  if (const auto end = answer.rfind("</think>"); end != std::string::npos) {
    answer = answer.substr(end + 8);
    x.notes.push_back("ignored the <think> section");
  } else if (trim(answer).substr(0, 7) == "<think>") {
    return failure(x, "the answer was cut off in its <think> section (no </think>): the model ran out of tokens while "
                      "reasoning; raise max_tokens");
  }
  if (trim(answer).empty()) return failure(x, "the answer is empty");

  auto scanned_answer = scan(answer);
  auto& blocks = scanned_answer.blocks;
  x.prose = scanned_answer.prose;
  for (const auto& b : blocks)
    if (!b.closed)
      return failure(x, fmt::format("the answer was cut off inside a code block (block {}, opened at answer line {}, "
                                    "never closed): the model probably ran out of tokens; raise max_tokens or ask for "
                                    "a shorter answer",
                                    b.index, b.line));

  // No fence at all: a bare source ("answer with the code only") is taken whole.
  if (blocks.empty()) {
    if (python ? !build::defines_model_new(answer) : (sniff(answer) != "c" || !starts_like_code(answer)))
      return failure(x, fmt::format("the answer has no code: expected the {} candidate in a fenced block (```{} ... ```) "
                                    "or SEARCH/REPLACE edits",
                                    lang, opt.language.empty() ? "cuda" : opt.language));
    code_block whole;
    whole.index = 1;
    whole.kind = main_kind;
    whole.body = std::string(trim(answer)) + "\n";
    blocks.push_back(std::move(whole));
    x.prose.clear();
    x.notes.push_back("the answer has no code fence; used all of it as the source");
  }

  std::vector<const code_block*> mains, c_blocks, edit_blocks, others;
  for (const auto& b : blocks) {
    if (python && (b.kind == "python" || b.kind == "c" || b.kind == "text") && build::defines_model_new(b.body))
      mains.push_back(&b); // an untagged load_inline file may read as C: its CUDA strings
    else if (b.kind == main_kind) (!python && is_main(b.body) ? mains : c_blocks).push_back(&b); // Python: helpers
    else if (b.kind == "edits" || b.kind == "diff") edit_blocks.push_back(&b);
    else others.push_back(&b);
  }
  if (mains.empty() && edit_blocks.empty()) {
    if (!c_blocks.empty())
      return failure(x, fmt::format("the answer's code ({} block{}) has no entry point: {}", c_blocks.size(),
                                    c_blocks.size() == 1 ? "" : "s", needs));
    std::string hint;
    for (const auto* b : others)
      if (!python &&
          (b->body.find("load_inline") != std::string::npos || b->body.find("torch.utils.cpp_extension") != std::string::npos))
        hint = "; this search's dialect takes the C++/CUDA source itself (--dialect torch-cuda takes load_inline files)";
    return failure(x, fmt::format("the answer has no {} code, only {} ({} block{}){}; {}", lang, kinds_of(others),
                                  others.size(), others.size() == 1 ? "" : "s", hint, needs));
  }

  // The last of (whole files, edits) wins: models revise, and the later text is the answer.
  const int last_main = mains.empty() ? 0 : mains.back()->index;
  const int last_edit = edit_blocks.empty() ? 0 : edit_blocks.back()->index;
  std::set<int> used;
  const code_block* main = nullptr;
  if (last_edit > last_main) {
    x.mode = "edits";
    if (trim(parent).empty())
      return failure(x, "the answer gives edits (SEARCH/REPLACE or a diff), but there is no parent source to apply them "
                        "to; ask for the whole file");
    std::vector<edit> edits;
    for (const auto* b : edit_blocks) {
      const auto err = b->kind == "edits" ? parse_search_replace(*b, edits) : parse_diff(*b, edits);
      if (!err.empty()) return failure(x, err);
      used.insert(b->index);
    }
    if (edits.empty())
      return failure(x, fmt::format("block {} looks like edits but holds no SEARCH/REPLACE edit or diff hunk",
                                    edit_blocks.front()->index));
    lines_t text = split_lines(parent);
    std::vector<std::string> edit_notes;
    if (const auto err = apply_edits(text, edits, edit_notes); !err.empty()) return failure(x, err);
    x.source = join_lines(text);
    std::string which;
    for (const auto* b : edit_blocks) which += (which.empty() ? "" : ", ") + std::to_string(b->index);
    x.notes.push_back(fmt::format("applied {} edit{} from block{} {} to the parent", edits.size(),
                                  edits.size() == 1 ? "" : "s", edit_blocks.size() == 1 ? "" : "s", which));
    if (parent_crlf) x.notes.push_back("the parent had CRLF line endings; the source has LF");
    x.notes.insert(x.notes.end(), edit_notes.begin(), edit_notes.end());
    for (const auto* m : mains)
      used.insert(m->index), x.notes.push_back(fmt::format("ignored block {} (a whole file): edits come after it", m->index));
  } else {
    x.mode = "whole";
    main = mains.back();
    used.insert(main->index);
    x.source = main->body;
    if (blocks.size() > 1)
      x.notes.push_back(fmt::format("{} code blocks; used block {}{} ({})", blocks.size(), main->index,
                                    main->file.empty() ? "" : " \"" + main->file + "\"",
                                    python ? "defines class ModelNew" : main_reason(main->body)));
    if (mains.size() > 1) {
      x.notes.push_back(fmt::format("{} blocks are whole candidates; used the last, block {}", mains.size(), main->index));
      for (const auto* m : mains)
        if (m != main) used.insert(m->index), x.notes.push_back(fmt::format("ignored block {}: an earlier version", m->index));
    }
    for (const auto* b : edit_blocks)
      used.insert(b->index), x.notes.push_back(fmt::format("ignored block {} (edits): a whole file comes after it", b->index));
  }

  // Headers the answer gives and the source includes are inlined: the ABI is one file. (A
  // Python candidate is one file too, but imports are not inlined: it is taken as given.)
  if (python) {
    for (const auto& b : blocks)
      if (!used.count(b.index))
        x.notes.push_back(fmt::format("ignored block {} ({}{})", b.index, b.kind, b.file.empty() ? "" : " \"" + b.file + "\""));
    if (!build::defines_model_new(x.source))
      return failure(x, x.mode == "edits" ? fmt::format("after the edits, the source has no entry point: {}", needs)
                                          : fmt::format("the source has no entry point: {}", needs));
    if (!x.source.empty() && x.source.back() != '\n') x.source += '\n';
    x.ok = true;
    return x;
  }
  inliner in{{}, {}, x.notes, {}};
  for (const auto* b : c_blocks) // a later block of the same name is a revision
    if (!b->file.empty()) in.headers[basename(b->file)] = b;
  x.source = in.run(x.source, "the candidate");
  {
    // One unnamed header for one unresolved include: the model forgot to name it.
    std::vector<const code_block*> unnamed;
    for (const auto* b : c_blocks)
      if (b->file.empty()) unnamed.push_back(b);
    std::vector<std::string> missing;
    for (const auto& u : in.unresolved)
      if (!in.done.count(basename(u)) && in.headers.find(basename(u)) == in.headers.end()) missing.push_back(u);
    if (missing.size() == 1 && unnamed.size() == 1) {
      code_block guessed = *unnamed[0];
      guessed.file = missing[0];
      inliner again{{{basename(missing[0]), &guessed}}, in.done, x.notes, {}};
      x.source = again.run(x.source, "the candidate");
      x.notes.push_back(fmt::format("block {} has no file name; took it as \"{}\", the one include no block names",
                                    unnamed[0]->index, missing[0]));
      in.done.insert(basename(missing[0]));
      used.insert(unnamed[0]->index);
      in.unresolved = again.unresolved;
    }
  }
  for (const auto& u : in.unresolved)
    if (!in.done.count(basename(u)) && u.rfind("kforge", 0) != 0)
      x.notes.push_back(fmt::format("the source includes \"{}\", which the answer does not give", u));
  for (const auto& [name, b] : in.headers)
    if (in.done.count(name)) used.insert(b->index);
  for (const auto& b : blocks)
    if (!used.count(b.index))
      x.notes.push_back(fmt::format("ignored block {} ({}{}){}", b.index, b.kind, b.file.empty() ? "" : " \"" + b.file + "\"",
                                    b.kind == "c" ? ": the candidate does not include it" : ""));

  // What the result must be.
  if (!is_main(x.source))
    return failure(x, x.mode == "edits" ? fmt::format("after the edits, the source has no entry point: {}", abi_needs)
                                        : fmt::format("the source has no entry point: {}", abi_needs));
  if (opt.language == "cpp") {
    if (build::declares_launches(x.source))
      return failure(x, "the source is a kernel-only CUDA candidate (// kforge: launch), but the candidate language is "
                        "cpp (a CPU problem): write a C++ kf_forward");
    if (const auto w = cuda_construct(x.source); !w.empty())
      return failure(x, fmt::format("the source is CUDA ({}), but the candidate language is cpp (a CPU problem): write "
                                    "host C++ only",
                                    w));
  }
  if (!x.source.empty() && x.source.back() != '\n') x.source += '\n';
  x.ok = true;
  return x;
}

} // namespace

std::vector<code_block> code_blocks(std::string_view answer) {
  try {
    bool cr = false;
    return scan(normalize(answer, cr)).blocks;
  } catch (const std::exception&) {
    return {};
  }
}

extracted extract_candidate(std::string_view answer, std::string_view parent_source, const extract_options& options) {
  try {
    return extract(answer, parent_source, options);
  } catch (const std::exception& e) {
    extracted x;
    x.error = std::string("internal error while reading the answer: ") + e.what();
    return x;
  }
}

} // namespace kforge::propose
