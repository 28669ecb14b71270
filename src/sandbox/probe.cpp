// sandbox::probe(): what kforge-confine can put in force on this machine, found by running it.
#include "core/error.hpp"
#include "core/fs.hpp"
#include "core/subprocess.hpp"
#include "sandbox/launch.hpp"
#include "sandbox/report.hpp"

#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace kforge::sandbox {
namespace {

layer_report all_missing(const std::string& why) {
  layer_report r;
  for (auto& n : layer_names()) r.push_back({n, false, why});
  return r;
}

std::string status_text(int st) {
  if (WIFEXITED(st)) return "exit " + std::to_string(WEXITSTATUS(st));
  if (WIFSIGNALED(st)) return std::string("signal ") + strsignal(WTERMSIG(st));
  return "status " + std::to_string(st);
}

} // namespace

layer_report probe() {
  const auto exe = confine_exe();
  if (::access(exe.c_str(), X_OK) != 0)
    return all_missing("kforge-confine not found at " + exe.string() + " (set KFORGE_CONFINE)");
  // A worker's policy, every limit set, so the report says which ones this machine enforces.
  policy p;
  p.read_paths = system_read_paths();
  p.device_paths = {"/dev/null"};
  scratch_dir scratch;
  p.scratch = scratch.path();
  p.env = {{"PATH", "/usr/bin:/bin"}};
  p.lim.memory_bytes = 1ull << 30;
  p.lim.processes = 64;
  p.lim.file_bytes = 1ull << 30;
  p.lim.cpu_s = 10;
  p.lim.scratch_bytes = 16ull << 20;
  auto prog = find_on_path("true");
  if (prog.empty()) prog = "/bin/true";

  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) return all_missing(std::string("pipe: ") + std::strerror(errno));
  constexpr int report_fd = 3;
  pid_t pid = -1;
  try {
    pid = spawn_in_own_group(confined_argv(p, {prog.string()}, report_fd), {{fds[1], report_fd}});
  } catch (const kforge::error& e) {
    ::close(fds[0]);
    ::close(fds[1]);
    return all_missing(e.what());
  }
  ::close(fds[1]);
  std::string text;
  char buf[4096];
  for (;;) {
    const ssize_t n = ::read(fds[0], buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    text.append(buf, static_cast<std::size_t>(n));
  }
  ::close(fds[0]);
  int st = 0;
  while (::waitpid(pid, &st, 0) < 0 && errno == EINTR) {}
  try {
    return report_from_json(nlohmann::json::parse(text.substr(0, text.find('\n'))));
  } catch (const std::exception&) {
    return all_missing("kforge-confine gave no report (" + status_text(st) + ")");
  }
}

} // namespace kforge::sandbox
