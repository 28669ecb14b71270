#include "core/text.hpp"

#include <nlohmann/json.hpp>

#include <cctype>

#include <algorithm>
#include <mutex>
#include <set>
#include <vector>

extern char** environ;

namespace kforge {

std::string_view trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

std::vector<std::string_view> lines_of(std::string_view s) {
  std::vector<std::string_view> out;
  std::size_t pos = 0;
  while (pos < s.size()) {
    auto end = s.find('\n', pos);
    if (end == std::string_view::npos) end = s.size();
    out.push_back(s.substr(pos, end - pos));
    pos = end + 1;
  }
  return out;
}

std::size_t edit_distance(std::string_view a, std::string_view b) {
  const std::size_t w = b.size() + 1;
  std::vector<std::size_t> d((a.size() + 1) * w);
  for (std::size_t i = 0; i <= a.size(); ++i) d[i * w] = i;
  for (std::size_t j = 0; j <= b.size(); ++j) d[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i)
    for (std::size_t j = 1; j <= b.size(); ++j) {
      std::size_t v = std::min({d[(i - 1) * w + j] + 1, d[i * w + j - 1] + 1,
                                d[(i - 1) * w + j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1)});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1]) v = std::min(v, d[(i - 2) * w + j - 2] + 1);
      d[i * w + j] = v;
    }
  return d[a.size() * w + b.size()];
}

// ------------------------------------------------------------------------- secrets

namespace {

std::mutex g_secret_names_mu;
std::set<std::string, std::less<>>& secret_names() {
  static std::set<std::string, std::less<>> names;
  return names;
}

struct secret {
  std::string name;
  std::string value; // as it is, or as a JSON string writes it
};

// The value as it appears inside a JSON string (nlohmann's escaping: \" \\ \b \f \n \r \t,
// other control characters as \u00xx; everything else as is).
std::string json_escaped(std::string_view v) {
  std::string out;
  for (char ch : v) {
    const auto c = static_cast<unsigned char>(ch);
    switch (c) {
    case '"': out += "\\\""; break;
    case '\\': out += "\\\\"; break;
    case '\b': out += "\\b"; break;
    case '\f': out += "\\f"; break;
    case '\n': out += "\\n"; break;
    case '\r': out += "\\r"; break;
    case '\t': out += "\\t"; break;
    default:
      if (c < 0x20) {
        static constexpr char hex[] = "0123456789abcdef";
        out += "\\u00";
        out += hex[c >> 4];
        out += hex[c & 15];
      } else {
        out += ch;
      }
    }
  }
  return out;
}

/// The secrets that occur in `text`, longest first (so a value containing another is
/// replaced whole).
std::vector<secret> secrets_in(std::string_view text) {
  std::vector<secret> found;
  if (text.size() < secret_min_length) return found;
  std::set<std::string, std::less<>> named;
  {
    std::lock_guard lock(g_secret_names_mu);
    named = secret_names();
  }
  for (char** e = environ; e && *e; ++e) {
    const std::string_view kv(*e);
    const auto eq = kv.find('=');
    if (eq == std::string_view::npos) continue;
    const auto name = kv.substr(0, eq), value = kv.substr(eq + 1);
    if (value.size() < secret_min_length || (!looks_secret(name) && !named.contains(name))) continue;
    if (text.find(value) != std::string_view::npos) found.push_back({std::string(name), std::string(value)});
    if (auto esc = json_escaped(value); esc != value && text.find(esc) != std::string_view::npos)
      found.push_back({std::string(name), std::move(esc)});
  }
  std::stable_sort(found.begin(), found.end(),
                   [](const secret& a, const secret& b) { return a.value.size() > b.value.size(); });
  return found;
}

void replace_secrets(std::string_view text, const std::vector<secret>& secrets, std::string& out) {
  std::size_t i = 0;
  while (i < text.size()) {
    bool hit = false;
    for (auto& s : secrets)
      if (text.substr(i).starts_with(s.value)) {
        out += "[redacted:" + s.name + "]";
        i += s.value.size();
        hit = true;
        break;
      }
    if (!hit) out += text[i++];
  }
}

} // namespace

bool looks_secret(std::string_view env_name) {
  std::string upper(env_name);
  for (auto& c : upper) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  for (const char* word : {"KEY", "TOKEN", "SECRET", "PASSWORD", "PASSWD", "CREDENTIAL"})
    if (upper.find(word) != std::string::npos) return true;
  return false;
}

void add_secret_variable(std::string_view env_name) {
  if (env_name.empty()) return;
  std::lock_guard lock(g_secret_names_mu);
  secret_names().emplace(env_name);
}

std::string scrub_secrets(std::string_view text) {
  const auto secrets = secrets_in(text);
  if (secrets.empty()) return std::string(text);
  std::string out;
  out.reserve(text.size());
  replace_secrets(text, secrets, out);
  return out;
}

std::string scrub_secrets_json(std::string_view text) {
  const auto secrets = secrets_in(text);
  if (secrets.empty()) return std::string(text);
  if (!nlohmann::json::accept(text)) return scrub_secrets(text);
  // Valid JSON: replace only within string literals (between unescaped quotes), where
  // "[redacted:NAME]" is itself a valid piece of a string; numbers and structure stay.
  std::string out;
  out.reserve(text.size());
  std::size_t i = 0;
  while (i < text.size()) {
    if (text[i] != '"') {
      out += text[i++];
      continue;
    }
    std::size_t end = i + 1;
    while (end < text.size() && text[end] != '"') end += text[end] == '\\' ? 2 : 1;
    end = std::min(end, text.size());
    out += '"';
    replace_secrets(text.substr(i + 1, end - i - 1), secrets, out);
    if (end < text.size()) out += '"';
    i = end + 1;
  }
  return out;
}

// --------------------------------------------------------------------------- UTF-8

namespace {

/// The length of the well-formed UTF-8 sequence starting at s[i], or 0 when there is none.
std::size_t utf8_sequence(std::string_view s, std::size_t i) {
  const auto b = [&](std::size_t k) { return static_cast<unsigned char>(s[k]); };
  const unsigned char c = b(i);
  if (c < 0x80) return 1;
  std::size_t n = 0;
  unsigned char lo = 0x80, hi = 0xBF; // the allowed range of the second byte (Unicode table 3-7)
  if (c >= 0xC2 && c <= 0xDF) n = 2;
  else if (c == 0xE0) n = 3, lo = 0xA0;
  else if (c >= 0xE1 && c <= 0xEC) n = 3;
  else if (c == 0xED) n = 3, hi = 0x9F; // no UTF-16 surrogates
  else if (c >= 0xEE && c <= 0xEF) n = 3;
  else if (c == 0xF0) n = 4, lo = 0x90;
  else if (c >= 0xF1 && c <= 0xF3) n = 4;
  else if (c == 0xF4) n = 4, hi = 0x8F; // nothing past U+10FFFF
  else return 0;
  if (i + n > s.size()) return 0;
  if (b(i + 1) < lo || b(i + 1) > hi) return 0;
  for (std::size_t k = 2; k < n; ++k)
    if (b(i + k) < 0x80 || b(i + k) > 0xBF) return 0;
  return n;
}

} // namespace

bool is_valid_utf8(std::string_view s) {
  for (std::size_t i = 0; i < s.size();) {
    const auto n = utf8_sequence(s, i);
    if (n == 0) return false;
    i += n;
  }
  return true;
}

std::string to_valid_utf8(std::string_view s) {
  if (is_valid_utf8(s)) return std::string(s);
  std::string out;
  out.reserve(s.size() + 16);
  for (std::size_t i = 0; i < s.size();) {
    if (const auto n = utf8_sequence(s, i)) {
      out.append(s.substr(i, n));
      i += n;
    } else {
      out += "\xEF\xBF\xBD"; // U+FFFD REPLACEMENT CHARACTER
      ++i;
    }
  }
  return out;
}

std::string printable_path(std::string_view path) {
  if (is_valid_utf8(path)) return std::string(path);
  std::string out;
  for (std::size_t i = 0; i < path.size();) {
    if (const auto n = utf8_sequence(path, i)) {
      out.append(path.substr(i, n));
      i += n;
    } else {
      static constexpr char hex[] = "0123456789abcdef";
      const auto c = static_cast<unsigned char>(path[i]);
      out += "\\x";
      out += hex[c >> 4];
      out += hex[c & 15];
      ++i;
    }
  }
  return out;
}

} // namespace kforge
