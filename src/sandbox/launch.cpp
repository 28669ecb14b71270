#include "sandbox/launch.hpp"

#include "core/error.hpp"
#include "core/fs.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

namespace kforge::sandbox {
namespace fs = std::filesystem;

fs::path confine_exe() {
  if (const char* v = std::getenv("KFORGE_CONFINE"); v && *v) return v;
  std::vector<fs::path> candidates{self_exe().parent_path() / "kforge-confine"};
  if (const char* w = std::getenv("KFORGE_WORKER"); w && *w) candidates.push_back(fs::path(w).parent_path() / "kforge-confine");
#ifdef KFORGE_CONFINE_BINARY
  candidates.push_back(KFORGE_CONFINE_BINARY); // a test binary, or a tool run from the build tree
#endif
  std::error_code ec;
  for (auto& c : candidates)
    if (fs::exists(c, ec)) return c;
  return candidates.front();
}

std::vector<std::string> confined_argv(const policy& p, const std::vector<std::string>& argv, int report_fd) {
  KFORGE_ASSERT(!argv.empty());
  std::vector<std::string> out{confine_exe().string(), "--policy", to_json(p).dump()};
  if (report_fd >= 0) {
    out.push_back("--report-fd");
    out.push_back(std::to_string(report_fd));
  }
  out.push_back("--");
  out.insert(out.end(), argv.begin(), argv.end());
  return out;
}

std::string disabled_reason() {
  const char* v = std::getenv("KFORGE_SANDBOX");
  if (v && std::string(v) == "off") return "KFORGE_SANDBOX=off: confinement turned off (debugging only)";
  return "";
}

namespace {

// Empties the directory open at `dirfd` (which it closes), depth first.
bool empty_dir(int dirfd) noexcept {
  DIR* d = ::fdopendir(dirfd);
  if (!d) {
    ::close(dirfd);
    return false;
  }
  bool ok = true;
  while (dirent* e = ::readdir(d)) {
    const char* n = e->d_name;
    if (!std::strcmp(n, ".") || !std::strcmp(n, "..")) continue;
    if (::unlinkat(::dirfd(d), n, 0) == 0) continue;
    if (errno != EISDIR && errno != EPERM) {
      ok = false;
      continue;
    }
    int sub = ::openat(::dirfd(d), n, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (sub < 0 && errno == EACCES && ::fchmodat(::dirfd(d), n, 0700, 0) == 0)
      sub = ::openat(::dirfd(d), n, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (sub < 0) {
      ok = false;
      continue;
    }
    ::fchmod(sub, 0700); // a directory left without write permission cannot be emptied
    ok = empty_dir(sub) && ok;
    if (::unlinkat(::dirfd(d), n, AT_REMOVEDIR) != 0) ok = false;
  }
  ::closedir(d);
  return ok;
}

} // namespace

bool remove_tree(const fs::path& p) noexcept {
  if (::unlink(p.c_str()) == 0) return true;  // a file or a symlink: itself only
  if (errno == ENOENT) return true;
  int fd = ::open(p.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) return false;
  ::fchmod(fd, 0700);
  const bool ok = empty_dir(fd);
  return ::rmdir(p.c_str()) == 0 && ok;
}

scratch_dir::scratch_dir() {
  const char* t = std::getenv("TMPDIR");
  std::string templ = (t && *t ? std::string(t) : std::string("/tmp")) + "/kforge-scratch-XXXXXX";
  if (!::mkdtemp(templ.data()))
    KFORGE_THROW(internal, "cannot make a scratch directory {}: {}", templ, std::strerror(errno));
  ::chmod(templ.c_str(), 0700);
  m_path = templ;
}

scratch_dir::~scratch_dir() {
  if (!m_path.empty()) remove_tree(m_path);
}

scratch_dir::scratch_dir(scratch_dir&& o) noexcept : m_path(std::move(o.m_path)) { o.m_path.clear(); }

scratch_dir& scratch_dir::operator=(scratch_dir&& o) noexcept {
  if (this != &o) {
    if (!m_path.empty()) remove_tree(m_path);
    m_path = std::move(o.m_path);
    o.m_path.clear();
  }
  return *this;
}

} // namespace kforge::sandbox
