#include "sandbox/policy.hpp"

#include "core/error.hpp"

#include <algorithm>
#include <cstdlib>
#include <string_view>
#include <cmath>
#include <set>

namespace kforge::sandbox {
namespace {

using nlohmann::json;
namespace fs = std::filesystem;

bool valid_utf8(const std::string& s) {
  std::size_t i = 0;
  while (i < s.size()) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (c < 0x80) {
      ++i;
      continue;
    }
    std::size_t n = 0;
    std::uint32_t cp = 0;
    if ((c >> 5) == 0x6) n = 1, cp = c & 0x1F;
    else if ((c >> 4) == 0xE) n = 2, cp = c & 0x0F;
    else if ((c >> 3) == 0x1E) n = 3, cp = c & 0x07;
    else return false;
    if (i + n >= s.size()) return false;
    for (std::size_t k = 1; k <= n; ++k) {
      const auto d = static_cast<unsigned char>(s[i + k]);
      if ((d >> 6) != 0x2) return false;
      cp = (cp << 6) | (d & 0x3F);
    }
    // Overlong forms, surrogates and code points past U+10FFFF are not UTF-8.
    if ((n == 1 && cp < 0x80) || (n == 2 && cp < 0x800) || (n == 3 && cp < 0x10000) || cp > 0x10FFFF ||
        (cp >= 0xD800 && cp <= 0xDFFF))
      return false;
    i += n + 1;
  }
  return true;
}

// A byte string as JSON: itself when it is UTF-8, else {"hex": ...} (JSON text is UTF-8).
json bytes_to_json(const std::string& s) {
  if (valid_utf8(s)) return s;
  static const char* digits = "0123456789abcdef";
  std::string hex;
  for (unsigned char c : s) {
    hex += digits[c >> 4];
    hex += digits[c & 0xF];
  }
  return json{{"hex", hex}};
}

std::string bytes_from_json(const json& j, const std::string& what) {
  if (j.is_string()) return j.get<std::string>();
  if (j.is_object() && j.size() == 1 && j.contains("hex") && j["hex"].is_string()) {
    const auto hex = j["hex"].get<std::string>();
    auto nibble = [&](char c) -> int {
      if (c >= '0' && c <= '9') return c - '0';
      if (c >= 'a' && c <= 'f') return c - 'a' + 10;
      if (c >= 'A' && c <= 'F') return c - 'A' + 10;
      KFORGE_THROW(usage, "sandbox policy: {}: '{}' is not hexadecimal", what, hex);
    };
    if (hex.size() % 2) KFORGE_THROW(usage, "sandbox policy: {}: odd number of hex digits", what);
    std::string out;
    for (std::size_t i = 0; i < hex.size(); i += 2) out += static_cast<char>(nibble(hex[i]) * 16 + nibble(hex[i + 1]));
    return out;
  }
  KFORGE_THROW(usage, "sandbox policy: {} must be a string or {{\"hex\": ...}}, not {}", what, j.dump());
}

json paths_to_json(const std::vector<fs::path>& ps) {
  json a = json::array();
  for (auto& p : ps) a.push_back(bytes_to_json(p.native()));
  return a;
}

fs::path path_from_json(const json& j, const std::string& what) {
  fs::path p = bytes_from_json(j, what);
  if (!p.is_absolute()) KFORGE_THROW(usage, "sandbox policy: {}: '{}' is not an absolute path", what, p.string());
  if (p.native().find('\0') != std::string::npos) KFORGE_THROW(usage, "sandbox policy: {}: a path holds a NUL byte", what);
  return p;
}

std::vector<fs::path> paths_from_json(const json& j, const std::string& what) {
  if (!j.is_array()) KFORGE_THROW(usage, "sandbox policy: {} must be an array of paths", what);
  std::vector<fs::path> out;
  for (auto& e : j) out.push_back(path_from_json(e, what));
  return out;
}

std::vector<std::string> layers_from_json(const json& j, const std::string& what) {
  if (!j.is_array()) KFORGE_THROW(usage, "sandbox policy: {} must be an array of layer names", what);
  std::vector<std::string> out;
  for (auto& e : j) {
    if (!e.is_string()) KFORGE_THROW(usage, "sandbox policy: {} must hold layer names, not {}", what, e.dump());
    const auto n = e.get<std::string>();
    const auto& names = layer_names();
    if (std::find(names.begin(), names.end(), n) == names.end())
      KFORGE_THROW(usage, "sandbox policy: {}: unknown layer '{}'", what, n);
    out.push_back(n);
  }
  return out;
}

void only_keys(const json& j, const std::set<std::string>& known, const std::string& what) {
  if (!j.is_object()) KFORGE_THROW(usage, "sandbox policy: {} must be an object, not {}", what, j.dump());
  for (auto& [k, v] : j.items())
    if (!known.count(k)) KFORGE_THROW(usage, "sandbox policy: unknown key '{}' in {}", k, what);
}

std::uint64_t count_from_json(const json& j, const std::string& what) {
  if (!j.is_number_integer() || (!j.is_number_unsigned() && j.get<std::int64_t>() < 0))
    KFORGE_THROW(usage, "sandbox policy: {} must be a non-negative integer, not {}", what, j.dump());
  return j.get<std::uint64_t>();
}

} // namespace

std::string to_string(syscall_profile p) {
  switch (p) {
  case syscall_profile::worker: return "worker";
  case syscall_profile::compiler: return "compiler";
  case syscall_profile::tool: return "tool";
  }
  return "worker";
}

syscall_profile profile_from_string(const std::string& s) {
  if (s == "worker") return syscall_profile::worker;
  if (s == "compiler") return syscall_profile::compiler;
  if (s == "tool") return syscall_profile::tool;
  KFORGE_THROW(usage, "sandbox policy: profile '{}' is not one of worker, compiler, tool", s);
}

json to_json(const policy& p) {
  json env = json::object();
  for (auto& [k, v] : p.env) {
    if (!valid_utf8(k)) KFORGE_THROW(usage, "sandbox policy: an environment variable's name is not UTF-8");
    env[k] = bytes_to_json(v);
  }
  return json{{"read_paths", paths_to_json(p.read_paths)},
              {"write_paths", paths_to_json(p.write_paths)},
              {"device_paths", paths_to_json(p.device_paths)},
              {"scratch", p.scratch.empty() ? json(nullptr) : bytes_to_json(p.scratch.native())},
              {"env", env},
              {"limits",
               {{"memory_bytes", p.lim.memory_bytes},
                {"processes", p.lim.processes},
                {"file_bytes", p.lim.file_bytes},
                {"cpu_s", p.lim.cpu_s},
                {"scratch_bytes", p.lim.scratch_bytes}}},
              {"profile", to_string(p.profile)},
              {"proc_self_write", p.proc_self_write},
              {"require", p.require},
              {"skip", p.skip}};
}

policy policy_from_json(const json& j) {
  only_keys(j, {"read_paths", "write_paths", "device_paths", "scratch", "env", "limits", "profile", "proc_self_write",
                "require", "skip"},
            "the policy");
  policy p;
  if (j.contains("read_paths")) p.read_paths = paths_from_json(j["read_paths"], "read_paths");
  if (j.contains("write_paths")) p.write_paths = paths_from_json(j["write_paths"], "write_paths");
  if (j.contains("device_paths")) p.device_paths = paths_from_json(j["device_paths"], "device_paths");
  if (j.contains("scratch") && !j["scratch"].is_null()) p.scratch = path_from_json(j["scratch"], "scratch");
  if (j.contains("env")) {
    if (!j["env"].is_object()) KFORGE_THROW(usage, "sandbox policy: env must be an object of strings");
    for (auto& [k, v] : j["env"].items()) {
      if (k.empty() || k.find('=') != std::string::npos)
        KFORGE_THROW(usage, "sandbox policy: env: '{}' is not a variable name", k);
      p.env[k] = bytes_from_json(v, "env." + k);
      if (p.env[k].find('\0') != std::string::npos) KFORGE_THROW(usage, "sandbox policy: env.{} holds a NUL byte", k);
    }
  }
  if (j.contains("limits")) {
    const auto& l = j["limits"];
    only_keys(l, {"memory_bytes", "processes", "file_bytes", "cpu_s", "scratch_bytes"}, "limits");
    if (l.contains("memory_bytes")) p.lim.memory_bytes = count_from_json(l["memory_bytes"], "limits.memory_bytes");
    if (l.contains("file_bytes")) p.lim.file_bytes = count_from_json(l["file_bytes"], "limits.file_bytes");
    if (l.contains("scratch_bytes")) p.lim.scratch_bytes = count_from_json(l["scratch_bytes"], "limits.scratch_bytes");
    if (l.contains("processes")) {
      const auto n = count_from_json(l["processes"], "limits.processes");
      if (n > 1u << 22) KFORGE_THROW(usage, "sandbox policy: limits.processes {} is more than the kernel allows", n);
      p.lim.processes = static_cast<int>(n);
    }
    if (l.contains("cpu_s")) {
      if (!l["cpu_s"].is_number() || !std::isfinite(l["cpu_s"].get<double>()) || l["cpu_s"].get<double>() < 0)
        KFORGE_THROW(usage, "sandbox policy: limits.cpu_s must be a non-negative number of seconds, not {}",
                     l["cpu_s"].dump());
      p.lim.cpu_s = l["cpu_s"].get<double>();
    }
  }
  if (j.contains("profile")) {
    if (!j["profile"].is_string()) KFORGE_THROW(usage, "sandbox policy: profile must be a string");
    p.profile = profile_from_string(j["profile"].get<std::string>());
  }
  if (j.contains("proc_self_write")) {
    if (!j["proc_self_write"].is_boolean()) KFORGE_THROW(usage, "sandbox policy: proc_self_write must be true or false");
    p.proc_self_write = j["proc_self_write"].get<bool>();
  }
  if (j.contains("require")) p.require = layers_from_json(j["require"], "require");
  if (j.contains("skip")) p.skip = layers_from_json(j["skip"], "skip");
  return p;
}

std::vector<fs::path> system_read_paths() {
  return {"/usr", "/lib", "/lib32", "/lib64", "/libx32", "/bin", "/sbin", "/opt",
          "/etc/ld.so.cache", "/etc/ld.so.conf", "/etc/ld.so.conf.d", "/etc/alternatives",
          "/etc/localtime", "/etc/nsswitch.conf", "/etc/passwd", "/etc/group", "/etc/nvidia"};
}

std::vector<fs::path> library_path_dirs() {
  std::vector<fs::path> out;
  if (const char* ld = std::getenv("LD_LIBRARY_PATH"))
    for (std::string_view rest = ld; !rest.empty();) {
      const auto colon = rest.find(':');
      if (colon != 0) out.emplace_back(std::string(rest.substr(0, colon)));
      rest = colon == std::string_view::npos ? std::string_view() : rest.substr(colon + 1);
    }
  return out;
}

std::vector<fs::path> default_device_paths() {
  std::vector<fs::path> out{"/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom"};
  std::error_code ec;
  std::vector<fs::path> nv;
  for (auto& e : fs::directory_iterator("/dev", ec))
    if (e.path().filename().string().rfind("nvidia", 0) == 0) nv.push_back(e.path());
  std::sort(nv.begin(), nv.end());
  out.insert(out.end(), nv.begin(), nv.end());
  return out;
}

} // namespace kforge::sandbox
