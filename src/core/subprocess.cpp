#include "core/subprocess.hpp"

#include "core/error.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>

extern char** environ;

namespace kforge {

pid_t spawn_in_own_group(const std::vector<std::string>& argv, const std::vector<std::pair<int, int>>& descriptors) {
  KFORGE_ASSERT(!argv.empty());
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  bool sets_stdin = false;
  for (auto [from, to] : descriptors) {
    posix_spawn_file_actions_adddup2(&fa, from, to);
    sets_stdin = sets_stdin || to == 0;
  }
  if (!sets_stdin) posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP);
  posix_spawnattr_setpgroup(&attr, 0);
  std::vector<char*> cargv;
  for (auto& a : argv) cargv.push_back(const_cast<char*>(a.c_str()));
  cargv.push_back(nullptr);
  pid_t pid = -1;
  const int rc = ::posix_spawnp(&pid, cargv[0], &fa, &attr, cargv.data(), environ);
  posix_spawn_file_actions_destroy(&fa);
  posix_spawnattr_destroy(&attr);
  if (rc != 0) KFORGE_THROW(internal, "cannot run '{}': {}", argv[0], std::strerror(rc));
  return pid;
}

command_result run_command(const std::vector<std::string>& argv, double timeout_s, std::size_t max_output) {
  KFORGE_ASSERT(!argv.empty());
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) KFORGE_THROW(internal, "pipe: {}", std::strerror(errno));

  const auto t0 = std::chrono::steady_clock::now();
  pid_t pid = -1;
  try {
    pid = spawn_in_own_group(argv, {{fds[1], 1}, {fds[1], 2}});
  } catch (...) {
    ::close(fds[0]);
    ::close(fds[1]);
    throw;
  }
  ::close(fds[1]);

  command_result res;
  char buf[65536];
  bool open = true;
  while (open) {
    const double left = timeout_s - std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (left <= 0) {
      res.timed_out = true;
      ::kill(-pid, SIGKILL);
      break;
    }
    pollfd p{fds[0], POLLIN, 0};
    int n = ::poll(&p, 1, static_cast<int>(std::min(left, 1.0) * 1000) + 1);
    if (n < 0 && errno == EINTR) continue;
    if (n > 0) {
      ssize_t r = ::read(fds[0], buf, sizeof buf);
      if (r <= 0) open = false;
      else if (res.output.size() < max_output)
        res.output.append(buf, std::min<std::size_t>(r, max_output - res.output.size()));
    }
  }
  ::close(fds[0]);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {}
  res.duration_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (!res.timed_out) {
    if (WIFSIGNALED(status)) {
      res.signaled = true;
      res.signal = WTERMSIG(status);
    } else {
      res.exit_code = WEXITSTATUS(status);
    }
  }
  return res;
}

bool write_all(int fd, std::string_view bytes) {
  while (!bytes.empty()) {
    const ssize_t w = ::write(fd, bytes.data(), bytes.size());
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return false;
    bytes.remove_prefix(static_cast<std::size_t>(w));
  }
  return true;
}

std::string join_command(const std::vector<std::string>& argv) {
  std::string out;
  for (auto& a : argv) {
    if (!out.empty()) out += ' ';
    const bool plain = !a.empty() && a.find_first_of(" \t\"'$\\*?;&|<>()") == std::string::npos;
    if (plain) {
      out += a;
    } else {
      out += '\'';
      for (char c : a) {
        if (c == '\'') out += "'\\''";
        else out += c;
      }
      out += '\'';
    }
  }
  return out;
}

} // namespace kforge
