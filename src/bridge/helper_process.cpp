#include "bridge/helper_process.hpp"

#include "core/error.hpp"
#include "core/fd_passing.hpp"
#include "core/subprocess.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>

namespace kforge::bridge {
namespace {
constexpr std::size_t output_keep = 16 * 1024;
}

helper_process::helper_process(const std::vector<std::string>& argv) {
  KFORGE_ASSERT(!argv.empty());
  int in[2], ans[2], out[2], sv[2];
  if (::pipe2(in, O_CLOEXEC) || ::pipe2(ans, O_CLOEXEC) || ::pipe2(out, O_CLOEXEC))
    KFORGE_THROW(internal, "pipe: {}", std::strerror(errno));
  make_fd_socket(sv);
  try {
    m_pid = spawn_in_own_group(argv, {{in[0], 0}, {out[1], 1}, {out[1], 2}, {ans[1], 3}, {sv[1], 4}});
  } catch (...) {
    for (int fd : {in[0], in[1], ans[0], ans[1], out[0], out[1], sv[0], sv[1]}) ::close(fd);
    throw;
  }
  ::close(in[0]);
  ::close(ans[1]);
  ::close(out[1]);
  ::close(sv[1]);
  m_fds = sv[0];
  m_in = in[1];
  m_answer = ans[0];
  m_out = out[0];
  ::fcntl(m_out, F_SETFL, ::fcntl(m_out, F_GETFL) | O_NONBLOCK);
}

helper_process::~helper_process() {
  if (m_pid > 0 && m_ended.empty()) {
    // Closing stdin ends its request loop; a helper busy past a second is killed.
    ::close(m_in);
    m_in = -1;
    for (int i = 0; i < 20; ++i) {
      int status = 0;
      if (::waitpid(m_pid, &status, WNOHANG) == m_pid) {
        m_ended = "exited";
        break;
      }
      ::usleep(50 * 1000);
    }
    if (m_ended.empty()) kill_and_reap("stopped");
  }
  for (int fd : {m_in, m_answer, m_out, m_fds})
    if (fd >= 0) ::close(fd);
}

void helper_process::send_fd(const std::string& label, int fd) {
  if (!alive()) KFORGE_THROW(worker, "the PyTorch helper has ended ({})", m_ended);
  send_fds(m_fds, label, {fd});
}

void helper_process::drain_output() {
  char buf[8192];
  for (;;) {
    const ssize_t r = ::read(m_out, buf, sizeof buf);
    if (r <= 0) break;
    m_output.append(buf, static_cast<std::size_t>(r));
  }
  if (m_output.size() > output_keep) m_output.erase(0, m_output.size() - output_keep);
}

void helper_process::kill_and_reap(const std::string& why) {
  if (m_pid <= 0) return;
  ::kill(-m_pid, SIGKILL);
  int status = 0;
  while (::waitpid(m_pid, &status, 0) < 0 && errno == EINTR) {}
  drain_output();
  m_ended = why;
}

std::optional<std::string> helper_process::exchange(const std::string& request, double timeout_s) {
  if (!alive()) return std::nullopt;
  // A helper that died while idle shows as a failed write (SIGPIPE is ignored here).
  struct sigaction ign{}, old{};
  ign.sa_handler = SIG_IGN;
  ::sigaction(SIGPIPE, &ign, &old);
  const bool sent = write_all(m_in, request);
  ::sigaction(SIGPIPE, &old, nullptr);
  if (!sent) {
    int status = 0;
    ::waitpid(m_pid, &status, 0);
    drain_output();
    m_ended = WIFSIGNALED(status) ? "signal " + std::to_string(WTERMSIG(status))
                                  : "exit code " + std::to_string(WEXITSTATUS(status));
    return std::nullopt;
  }
  const auto t0 = std::chrono::steady_clock::now();
  char buf[4096];
  for (;;) {
    if (auto nl = m_pending.find('\n'); nl != std::string::npos) {
      std::string line = m_pending.substr(0, nl);
      m_pending.erase(0, nl + 1);
      drain_output();
      return line;
    }
    const double left = timeout_s - std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (left <= 0) {
      kill_and_reap("timed out after " + std::to_string(static_cast<int>(timeout_s)) + " s");
      return std::nullopt;
    }
    pollfd p[2] = {{m_answer, POLLIN, 0}, {m_out, POLLIN, 0}};
    const int n = ::poll(p, 2, static_cast<int>(std::min(left, 1.0) * 1000) + 1);
    if (n < 0 && errno == EINTR) continue;
    if (p[1].revents & POLLIN) drain_output(); // keep its prints flowing, or it blocks on a full pipe
    if (p[0].revents & (POLLIN | POLLHUP)) {
      const ssize_t r = ::read(m_answer, buf, sizeof buf);
      if (r > 0) {
        m_pending.append(buf, static_cast<std::size_t>(r));
        continue;
      }
      // The answer channel closed: the helper ended.
      int status = 0;
      while (::waitpid(m_pid, &status, 0) < 0 && errno == EINTR) {}
      drain_output();
      m_ended = WIFSIGNALED(status) ? "signal " + std::to_string(WTERMSIG(status))
                                    : "exit code " + std::to_string(WEXITSTATUS(status));
      return std::nullopt;
    }
  }
}

} // namespace kforge::bridge
