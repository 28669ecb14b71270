#include "core/fs.hpp"

#include "core/error.hpp"

#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <random>
#include <sstream>

namespace kforge {

std::string read_file(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  if (!in) KFORGE_THROW(usage, "{}: cannot read file", p.string());
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

void write_file_atomic(const std::filesystem::path& p, const std::string& data) {
  write_file_atomic(p, std::vector<std::string_view>{data});
}

void write_file_atomic(const std::filesystem::path& p, const std::vector<std::string_view>& parts) {
  std::filesystem::create_directories(p.parent_path().empty() ? "." : p.parent_path());
  auto tmp = p;
  tmp += ".tmp." + std::to_string(::getpid()) + "." + std::to_string(std::random_device{}());
  {
    std::ofstream out(tmp, std::ios::binary);
    if (!out) KFORGE_THROW(internal, "{}: cannot write file", tmp.string());
    for (auto part : parts) out.write(part.data(), static_cast<std::streamsize>(part.size()));
    if (!out) KFORGE_THROW(internal, "{}: write failed", tmp.string());
  }
  std::filesystem::rename(tmp, p);
}

std::filesystem::path cache_root() {
  if (const char* c = std::getenv("KFORGE_CACHE"); c && *c) return c;
  if (const char* x = std::getenv("XDG_CACHE_HOME"); x && *x) return std::filesystem::path(x) / "kforge";
  if (const char* h = std::getenv("HOME"); h && *h) return std::filesystem::path(h) / ".cache" / "kforge";
  return std::filesystem::temp_directory_path() / "kforge-cache";
}

std::filesystem::path self_exe() { return std::filesystem::read_symlink("/proc/self/exe"); }

std::filesystem::path data_path(const std::filesystem::path& rel) {
  std::vector<std::filesystem::path> roots;
  bool in_build_tree = true; // no /proc: only the source tree is left to try
  try {
    const auto exe = self_exe();
    const auto prefix = exe.parent_path().parent_path();
    roots = {prefix / "share" / "kforge", prefix};
    const std::string build_dir = KFORGE_BINARY_DIR;
    in_build_tree = exe.string().starts_with(build_dir + "/");
  } catch (const std::exception&) {
  }
  // The source tree only for programs still in the build tree (tests, build/kforge): an
  // installed or copied kforge must find its own data, or say where it looked.
  if (in_build_tree || roots.empty()) roots.emplace_back(KFORGE_SOURCE_DIR);
  std::error_code ec;
  for (const auto& r : roots)
    if (std::filesystem::exists(r / rel, ec)) return r / rel;
  return roots.back() / rel;
}

std::filesystem::path find_on_path(const std::string& name) {
  std::error_code ec;
  if (const char* path = std::getenv("PATH")) {
    std::string_view rest(path);
    while (!rest.empty()) {
      const auto colon = rest.find(':');
      const std::string dir(rest.substr(0, colon));
      rest = colon == std::string_view::npos ? std::string_view() : rest.substr(colon + 1);
      if (!dir.empty() && std::filesystem::is_regular_file(std::filesystem::path(dir) / name, ec))
        return std::filesystem::path(dir) / name;
    }
  }
  return {};
}

} // namespace kforge
