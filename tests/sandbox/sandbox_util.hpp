#pragma once
// Shared by the sandbox tests: run a program under kforge-confine with a worker-like policy,
// collect its output, its report and how it ended; skip (naming the reason) when a layer the
// test relies on is not in force on this machine.
#include "sandbox/launch.hpp"
#include "sandbox/policy.hpp"
#include "sandbox/report.hpp"
#include "test_util.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <dirent.h>
#include <fcntl.h>
#include <grp.h>
#include <poll.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <fstream>
#include <functional>
#include <random>
#include <string>
#include <vector>

namespace kforge::test {

inline std::filesystem::path confine_binary() { return env_path("KFORGE_CONFINE", KFORGE_CONFINE_BINARY); }
inline std::filesystem::path attacker_binary() { return env_path("KFORGE_ATTACKER", KFORGE_ATTACKER_BINARY); }

// An unprivileged uid for the tests that need one when they run as root (RLIMIT_NPROC does
// not apply to root).
inline constexpr uid_t nobody = 65534;

/// A worker-like policy around the attacker: the system's programs and libraries and the
/// attacker read-only, /dev/null, a private scratch dir, PATH only, modest limits.
struct confined {
  sandbox::scratch_dir scratch;
  sandbox::policy policy;
  confined() {
    ::setenv("KFORGE_CONFINE", confine_binary().c_str(), 1);
    policy.read_paths = sandbox::system_read_paths();
    policy.read_paths.push_back(attacker_binary());
    policy.device_paths = {"/dev/null"};
    policy.scratch = scratch.path();
    policy.env = {{"PATH", "/usr/bin:/bin"}, {"LANG", "C"}};
    policy.lim.memory_bytes = 1ull << 30;
    policy.lim.processes = 64;
    policy.lim.file_bytes = 64ull << 20;
    policy.lim.cpu_s = 60;
    policy.lim.scratch_bytes = 64ull << 20;
  }
};

struct run_result {
  int status = -1;             // kforge-confine's wait status
  std::string output;          // its stdout and stderr (the program's included)
  std::string report_text;     // what came on the report fd
  sandbox::layer_report layers;
  bool has_report = false;
  pid_t pid = -1;
  [[nodiscard]] bool exited(int code) const { return WIFEXITED(status) && WEXITSTATUS(status) == code; }
  [[nodiscard]] bool signaled(int sig) const { return WIFSIGNALED(status) && WTERMSIG(status) == sig; }
  [[nodiscard]] std::string describe() const {
    std::string s = WIFEXITED(status)     ? "exit " + std::to_string(WEXITSTATUS(status))
                    : WIFSIGNALED(status) ? std::string("signal ") + strsignal(WTERMSIG(status))
                                          : "status " + std::to_string(status);
    return s + "; output: " + output;
  }
  /// "" when every layer named is active, else what is missing and why.
  [[nodiscard]] std::string lacking(const std::vector<std::string>& names) const {
    std::string why;
    for (auto& n : names) {
      const auto* l = sandbox::find_layer(layers, n);
      if (!l) why += n + ": not in the report; ";
      else if (!l->active) why += n + ": " + l->detail + "; ";
    }
    return why;
  }
};

struct run_options {
  bool unprivileged = false;   // as uid/gid 65534 when the test runs as root
  double timeout_s = 60;
  std::function<void(pid_t)> while_running;  // called once started, with kforge-confine's pid
};

/// Runs argv (the attacker's sub-command and arguments) under kforge-confine with `p`.
inline run_result run_confined(const sandbox::policy& p, const std::vector<std::string>& args,
                               const run_options& o = {}) {
  std::vector<std::string> argv{attacker_binary().string()};
  argv.insert(argv.end(), args.begin(), args.end());
  const auto full = sandbox::confined_argv(p, argv, 3);
  std::vector<char*> cargv;
  for (auto& a : full) cargv.push_back(const_cast<char*>(a.c_str()));
  cargv.push_back(nullptr);
  int out[2], rep[2];
  if (::pipe2(out, O_CLOEXEC) != 0 || ::pipe2(rep, O_CLOEXEC) != 0) throw std::runtime_error("pipe");
  const bool drop = o.unprivileged && ::getuid() == 0;
  run_result r;
  r.pid = ::fork();
  if (r.pid == 0) {
    ::dup2(out[1], 1);
    ::dup2(out[1], 2);
    ::dup2(rep[1], 3);
    const int null = ::open("/dev/null", O_RDONLY);
    ::dup2(null, 0);
    ::syscall(SYS_close_range, 4, ~0U, 0);
    if (drop && (::setgroups(0, nullptr) != 0 || ::setgid(nobody) != 0 || ::setuid(nobody) != 0)) ::_exit(99);
    ::execv(cargv[0], cargv.data());
    ::_exit(98);
  }
  ::close(out[1]);
  ::close(rep[1]);
  if (o.while_running) o.while_running(r.pid);
  const auto t0 = std::chrono::steady_clock::now();
  bool out_open = true, rep_open = true;
  char buf[8192];
  while (out_open || rep_open) {
    pollfd fds[2] = {{out_open ? out[0] : -1, POLLIN, 0}, {rep_open ? rep[0] : -1, POLLIN, 0}};
    const int n = ::poll(fds, 2, 200);
    if (std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() > o.timeout_s) {
      ::kill(r.pid, SIGKILL);
      ADD_FAILURE() << "kforge-confine did not end within " << o.timeout_s << " s";
      break;
    }
    if (n <= 0) continue;
    for (int i = 0; i < 2; ++i) {
      if (!(fds[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
      const ssize_t k = ::read(fds[i].fd, buf, sizeof buf);
      if (k <= 0) (i == 0 ? out_open : rep_open) = false;
      else (i == 0 ? r.output : r.report_text).append(buf, static_cast<std::size_t>(k));
    }
  }
  ::close(out[0]);
  ::close(rep[0]);
  while (::waitpid(r.pid, &r.status, 0) < 0 && errno == EINTR) {}
  if (!r.report_text.empty()) {
    try {
      r.layers = sandbox::report_from_json(nlohmann::json::parse(r.report_text.substr(0, r.report_text.find('\n'))));
      r.has_report = true;
    } catch (const std::exception& e) {
      ADD_FAILURE() << "malformed report: " << e.what() << ": " << r.report_text;
    }
  }
  return r;
}

/// Skips the test, naming the reason, when a layer it relies on is not in force here.
#define KFORGE_REQUIRE_LAYERS(run, ...)                                                             \
  do {                                                                                              \
    ASSERT_TRUE((run).has_report) << (run).describe();                                              \
    if (const auto why = (run).lacking({__VA_ARGS__}); !why.empty())                                \
      GTEST_SKIP() << "this machine lacks a layer the test relies on: " << why;                     \
  } while (0)

/// The pids of the processes whose command line holds `marker`.
inline std::vector<pid_t> processes_with(const std::string& marker) {
  std::vector<pid_t> out;
  DIR* d = ::opendir("/proc");
  if (!d) return out;
  while (dirent* e = ::readdir(d)) {
    if (e->d_name[0] < '0' || e->d_name[0] > '9') continue;
    std::ifstream f(std::string("/proc/") + e->d_name + "/cmdline", std::ios::binary);
    std::string cmd((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
    for (auto& c : cmd)
      if (c == '\0') c = ' ';
    if (cmd.find(marker) != std::string::npos) out.push_back(std::atoi(e->d_name));
  }
  ::closedir(d);
  return out;
}

inline std::string random_token() {
  std::random_device rd;
  return "kf" + std::to_string(rd()) + std::to_string(rd());
}

/// A directory the unprivileged uid can use (scratch dirs are 0700 and root's otherwise).
inline void give_to_nobody(const std::filesystem::path& p) {
  if (::getuid() == 0) (void)::chown(p.c_str(), nobody, nobody);
}

/// Whether uid 65534 can run kforge-confine and the attacker (their directories must be
/// searchable by it), for the tests that drop to it.
inline std::string unprivileged_unusable() {
  if (::getuid() != 0) return "";
  for (auto& p : {confine_binary(), attacker_binary()}) {
    for (auto d = p; d != d.root_path(); d = d.parent_path()) {
      struct stat st {};
      if (::stat(d.c_str(), &st) != 0 || !(st.st_mode & S_IXOTH))
        return "uid 65534 cannot reach " + p.string() + " (" + d.string() + " is not searchable by others)";
    }
  }
  return "";
}

} // namespace kforge::test
