#include "profile/sass.hpp"
#include "core/text.hpp"

#include <cctype>
#include <cstdlib>
#include <cxxabi.h>
#include <fmt/format.h>
#include <memory>

namespace kforge::profile {
namespace {


std::vector<std::string_view> split(std::string_view s, char sep) {
  std::vector<std::string_view> out;
  while (true) {
    auto p = s.find(sep);
    out.push_back(s.substr(0, p));
    if (p == std::string_view::npos) break;
    s.remove_prefix(p + 1);
  }
  return out;
}

// "/*0a80*/   @!P0 LDG.E.128 R4, desc[UR4][R2.64] ;  /* 0x... */" -> "@!P0 LDG.E.128 R4, desc[UR4][R2.64]"
// (empty when the line is not an instruction).
std::string_view instruction_text(std::string_view line) {
  line = trim(line);
  if (!line.starts_with("/*")) return {};
  std::size_t i = 2;
  while (i < line.size() && std::isxdigit(static_cast<unsigned char>(line[i]))) ++i;
  if (i == 2 || line.substr(i, 2) != "*/") return {};
  auto rest = line.substr(i + 2);
  if (auto semi = rest.find(';'); semi != std::string_view::npos) rest = rest.substr(0, semi);
  rest = trim(rest);
  while (!rest.empty() && (rest.front() == '{' || rest.front() == '}')) rest = trim(rest.substr(1));
  return rest;
}

int access_bytes(const std::vector<std::string_view>& mods) {
  int bytes = 4;
  for (auto m : mods) {
    if (m == "U8" || m == "S8") bytes = 1;
    else if (m == "U16" || m == "S16") bytes = 2;
    else if (m == "32") bytes = 4;
    else if (m == "64") bytes = 8;
    else if (m == "128") bytes = 16;
    else if (m == "256") bytes = 32;
  }
  return bytes;
}

void count(sass_function& f, std::string_view insn) {
  auto tokens_start = insn;
  if (tokens_start.starts_with('@')) {
    auto sp = tokens_start.find_first_of(" \t");
    if (sp == std::string_view::npos) return;
    tokens_start = trim(tokens_start.substr(sp));
  }
  auto opcode = tokens_start.substr(0, tokens_start.find_first_of(" \t"));
  if (opcode.empty()) return;
  auto parts = split(opcode, '.');
  const std::string base(parts.front());
  parts.erase(parts.begin());
  ++f.instructions;
  ++f.opcodes[base];
  if (base == "LDG" || base == "LDGSTS") {
    ++f.global_loads;
    ++f.global_load_bytes[access_bytes(parts)];
  } else if (base == "STG") {
    ++f.global_stores;
    ++f.global_store_bytes[access_bytes(parts)];
  } else if (base == "LDS" || base == "LDSM") {
    ++f.shared_loads;
  } else if (base == "STS" || base == "STSM") {
    ++f.shared_stores;
  } else if (base == "LDL") {
    ++f.local_loads;
  } else if (base == "STL") {
    ++f.local_stores;
  } else if (base == "HGMMA" || base == "QGMMA" || base == "IGMMA" || base == "BGMMA") {
    ++f.hgmma;
  } else if (base == "HMMA") {
    ++f.hmma;
  } else if (base == "IMMA") {
    ++f.imma;
  } else if (base == "UTMALDG" || base == "UTMASTG" || base == "UTMAREDG" || base == "UBLKCP" || base == "UBLKRED") {
    ++f.tma;
  } else if (base == "BAR") {
    ++f.barriers;
  }
}

std::string widths(const std::map<int, int>& m) {
  std::string out;
  for (auto& [bytes, n] : m) out += fmt::format(" {}B x{}", bytes, n);
  return out.empty() ? " none" : out;
}

// Strips a trailing balanced <...> or (...) group starting at depth 0 from the right.
std::string_view strip_trailing_group(std::string_view s, char open, char close) {
  if (s.empty() || s.back() != close) return s;
  int depth = 0;
  for (std::size_t i = s.size(); i-- > 0;) {
    if (s[i] == close) ++depth;
    else if (s[i] == open && --depth == 0) return trim(s.substr(0, i));
  }
  return s;
}

} // namespace

std::string demangle(const std::string& name) {
  if (!name.starts_with("_Z")) return name;
  int status = 0;
  std::unique_ptr<char, void (*)(void*)> out(abi::__cxa_demangle(name.c_str(), nullptr, nullptr, &status), std::free);
  return status == 0 && out ? std::string(out.get()) : name;
}

std::string base_name(std::string_view name) {
  std::string full = name.starts_with("_Z") ? demangle(std::string(name)) : std::string(name);
  std::string_view s = trim(full);
  // Trailing qualifiers after the parameter list ("... ) const") do not occur for kernels.
  s = strip_trailing_group(s, '(', ')');
  s = strip_trailing_group(s, '<', '>');
  // Drop a return type: the last space at template depth 0 separates it.
  int depth = 0;
  std::size_t cut = std::string_view::npos;
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '<' || s[i] == '(') ++depth;
    else if (s[i] == '>' || s[i] == ')') --depth;
    else if (s[i] == ' ' && depth == 0) cut = i;
  }
  if (cut != std::string_view::npos) s = s.substr(cut + 1);
  // ncu spells the anonymous namespace "<unnamed>", the demangler "(anonymous namespace)".
  std::string out(s);
  for (const std::string_view anon : {"(anonymous namespace)::", "<unnamed>::"})
    for (auto pos = out.find(anon); pos != std::string::npos; pos = out.find(anon))
      out.erase(pos, anon.size());
  return out;
}

std::vector<sass_function> parse_sass(std::string_view text) {
  std::vector<sass_function> out;
  std::string arch;
  sass_function* cur = nullptr;
  auto start = [&](std::string name) {
    out.emplace_back();
    cur = &out.back();
    cur->name = std::move(name);
    cur->demangled = demangle(cur->name);
    cur->arch = arch;
  };
  for (auto line : split(text, '\n')) {
    const auto t = trim(line);
    if (t.empty()) continue;
    if (t.starts_with("code for sm_")) {
      arch = std::string(trim(t.substr(9)));
      continue;
    }
    if (t.starts_with("arch = sm_")) {
      arch = std::string(trim(t.substr(7)));
      continue;
    }
    if (t.starts_with("Function :") || t.starts_with("Function:")) {
      start(std::string(trim(t.substr(t.find(':') + 1))));
      continue;
    }
    if (t.starts_with(".text.") && t.ends_with(":")) { // nvdisasm
      start(std::string(t.substr(6, t.size() - 7)));
      continue;
    }
    if (!cur) continue;
    if (auto insn = instruction_text(t); !insn.empty()) count(*cur, insn);
  }
  return out;
}

bool vectorized_loads(const sass_function& f) {
  for (auto& [bytes, n] : f.global_load_bytes)
    if (bytes >= 16 && n > 0) return true;
  return false;
}

nlohmann::json to_json(const sass_function& f) {
  auto widths_json = [](const std::map<int, int>& m) {
    nlohmann::json j = nlohmann::json::object();
    for (auto& [bytes, n] : m) j[std::to_string(bytes)] = n;
    return j;
  };
  return {{"name", f.name},
          {"demangled", f.demangled},
          {"arch", f.arch},
          {"instructions", f.instructions},
          {"opcodes", f.opcodes},
          {"global_loads", f.global_loads},
          {"global_stores", f.global_stores},
          {"global_load_bytes", widths_json(f.global_load_bytes)},
          {"global_store_bytes", widths_json(f.global_store_bytes)},
          {"shared_loads", f.shared_loads},
          {"shared_stores", f.shared_stores},
          {"local_loads", f.local_loads},
          {"local_stores", f.local_stores},
          {"hgmma", f.hgmma},
          {"hmma", f.hmma},
          {"imma", f.imma},
          {"tma", f.tma},
          {"barriers", f.barriers},
          {"vectorized_loads", vectorized_loads(f)}};
}

std::string summarize(const sass_function& f) {
  std::string s = fmt::format("{}: {} instr; global loads{}; stores{}; LDL/STL {}/{} ({}); HGMMA {}, HMMA {}; BAR {}",
                              base_name(f.name), f.instructions, widths(f.global_load_bytes),
                              widths(f.global_store_bytes), f.local_loads, f.local_stores,
                              f.local_loads + f.local_stores == 0 ? "no local memory"
                                                                  : "local memory: register spills or stack arrays",
                              f.hgmma, f.hmma, f.barriers);
  if (f.imma) s += fmt::format("; IMMA {}", f.imma);
  if (f.shared_loads + f.shared_stores) s += fmt::format("; LDS/STS {}/{}", f.shared_loads, f.shared_stores);
  if (f.tma) s += fmt::format("; TMA {}", f.tma);
  return s;
}

std::string summarize(const std::vector<sass_function>& fns) {
  std::string out;
  for (auto& f : fns) out += (out.empty() ? "" : "\n") + summarize(f);
  return out;
}

const sass_function* find_function(const std::vector<sass_function>& fns, std::string_view kernel_name) {
  const auto k = trim(kernel_name);
  for (auto& f : fns)
    if (f.name == k || f.demangled == k) return &f;
  const auto want = base_name(k);
  if (want.empty()) return nullptr;
  for (auto& f : fns)
    if (base_name(f.name) == want) return &f;
  return nullptr;
}

} // namespace kforge::profile
