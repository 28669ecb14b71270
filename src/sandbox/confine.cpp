#include "sandbox/confine.hpp"

#include "sandbox/layer_landlock.hpp"
#include "sandbox/layer_limits.hpp"
#include "sandbox/layer_namespaces.hpp"
#include "sandbox/layer_seccomp.hpp"
#include "sandbox/report.hpp"

#include <fmt/format.h>

#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>

extern char** environ;

namespace kforge::sandbox {
namespace {

[[noreturn]] void fail(const std::string& msg) {
  std::fprintf(stderr, "kforge-confine: %s\n", msg.c_str());
  ::_exit(confine_failed);
}

void write_all(int fd, const std::string& s) {
  std::size_t off = 0;
  while (off < s.size()) {
    const ssize_t w = ::write(fd, s.data() + off, s.size() - off);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return;
    off += static_cast<std::size_t>(w);
  }
}

// The program's environment: exactly the policy's, plus HOME and TMPDIR in the scratch dir
// when the policy names a scratch dir and does not set them.
std::vector<std::string> program_env(const policy& p, const std::vector<std::string>& inherited, layer_report& r) {
  auto& l = layer_at(r, "environment");
  std::vector<std::string> env;
  if (skipped(p, "environment")) {
    l = {"environment", false, "skipped by the policy: the whole environment inherited"};
    return inherited;
  }
  auto vars = p.env;
  if (!p.scratch.empty()) {
    vars.emplace("HOME", p.scratch.string());
    vars.emplace("TMPDIR", p.scratch.string());
  }
  std::string names;
  for (auto& [k, v] : vars) {
    env.push_back(k + "=" + v);
    names += (names.empty() ? "" : ", ") + k;
  }
  l = {"environment", true, fmt::format("built from the policy, nothing inherited: {}", names.empty() ? "(empty)" : names)};
  return env;
}

// The program itself: every per-process layer, the report, execve.
[[noreturn]] void run_program(const policy& p, const std::vector<std::string>& argv,
                              const std::vector<std::string>& inherited, int report_fd, const namespace_state& ns,
                              layer_report r, pid_t init_pid) {
  // Dies with init (which dies with kforge-confine): matters where there is no PID namespace.
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (::getppid() != init_pid) ::_exit(confine_failed);
  apply_limits(p, ns, r);
  const auto env = program_env(p, inherited, r);
  if (!p.scratch.empty() && ::chdir(p.scratch.c_str()) != 0)
    fail(fmt::format("cannot enter the scratch dir {}: {}", p.scratch.string(), errno_text(errno)));
  apply_no_new_privs(p, r);
  landlock::apply(p, ns, r);
  seccomp::apply(p, ns, r);
  drop_capabilities(r);

  std::vector<std::string> absent;
  for (auto& name : p.require)
    if (auto* l = find_layer(r, name); !l || !l->active) absent.push_back(name);
  if (report_fd >= 0) {
    const nlohmann::json line{{"layers", to_json(r)}, {"landlock_abi", landlock_abi()}};
    // A reader that went away must not kill the program with SIGPIPE here.
    auto* old = ::signal(SIGPIPE, SIG_IGN);
    write_all(report_fd, line.dump() + "\n");
    ::signal(SIGPIPE, old);
    ::close(report_fd);
  }
  if (!absent.empty()) {
    std::string s;
    for (auto& n : absent) s += (s.empty() ? "" : ", ") + n + " (" + find_layer(r, n)->detail + ")";
    fail("required layers not in force, the program was not run: " + s);
  }

  std::vector<char*> cargv, cenv;
  for (auto& a : argv) cargv.push_back(const_cast<char*>(a.c_str()));
  cargv.push_back(nullptr);
  for (auto& e : env) cenv.push_back(const_cast<char*>(e.c_str()));
  cenv.push_back(nullptr);
  ::execve(cargv[0], cargv.data(), cenv.data());
  std::fprintf(stderr, "kforge-confine: cannot run %s: %s\n", argv[0].c_str(), std::strerror(errno));
  ::_exit(exec_failed);
}

std::vector<pid_t> children_of_self() {
  std::vector<pid_t> out;
  DIR* d = ::opendir("/proc/self/task");
  if (!d) return out;
  while (dirent* e = ::readdir(d)) {
    if (e->d_name[0] == '.') continue;
    std::ifstream f(fmt::format("/proc/self/task/{}/children", e->d_name));
    pid_t c;
    while (f >> c) out.push_back(c);
  }
  ::closedir(d);
  return out;
}

// The same from every /proc/<pid>/stat (field 4 is the parent), for a kernel without
// CONFIG_PROC_CHILDREN.
std::vector<pid_t> children_by_stat() {
  std::vector<pid_t> out;
  const pid_t self = ::getpid();
  DIR* d = ::opendir("/proc");
  if (!d) return out;
  while (dirent* e = ::readdir(d)) {
    if (e->d_name[0] < '1' || e->d_name[0] > '9') continue;
    std::ifstream f(fmt::format("/proc/{}/stat", e->d_name));
    std::string line;
    std::getline(f, line);
    const auto close = line.rfind(')');  // the command name may hold spaces and parentheses
    if (close == std::string::npos) continue;
    std::istringstream rest(line.substr(close + 1));
    char state;
    pid_t ppid = 0;
    if (rest >> state >> ppid && ppid == self) out.push_back(std::atoi(e->d_name));
  }
  ::closedir(d);
  return out;
}

// Ends every process left in the sandbox, the caller excepted, and reaps them.
void kill_the_rest(bool pid_namespace) {
  if (pid_namespace) {
    // pid 1 of the namespace: kill(-1) reaches every other process in it.
    ::kill(-1, SIGKILL);
    while (::waitpid(-1, nullptr, __WALL) > 0 || errno == EINTR) {}
    return;
  }
  // A child subreaper: every descendant is a child, or becomes one when its parent dies.
  int unseen = 0;
  for (;;) {
    auto kids = children_of_self();
    if (kids.empty()) kids = children_by_stat();
    for (pid_t c : kids) ::kill(c, SIGKILL);
    const pid_t w = ::waitpid(-1, nullptr, kids.empty() ? __WALL | WNOHANG : __WALL);
    if (w < 0 && errno == ECHILD) break;
    if (w == 0) {  // a child neither /proc listing shows: never block on it for ever
      if (++unseen > 2000) break;
      ::usleep(1000);
    }
  }
}

[[noreturn]] void run_init(const policy& p, const std::vector<std::string>& argv,
                           const std::vector<std::string>& inherited, int report_fd, namespace_state ns,
                           layer_report r, int status_w, int outer_pidfd) {
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (outer_pidfd >= 0) {  // the outer process may have died before PDEATHSIG was set
    pollfd pf{outer_pidfd, POLLIN, 0};
    if (::poll(&pf, 1, 0) > 0) ::_exit(confine_failed);
    ::close(outer_pidfd);
  }
  if (!ns.pid) ::prctl(PR_SET_CHILD_SUBREAPER, 1);
  setup_mounts(p, ns, r);
  const pid_t self = ::getpid();
  const pid_t prog = ::fork();
  if (prog < 0) fail(fmt::format("fork: {}", errno_text(errno)));
  if (prog == 0) {
    ::close(status_w);
    run_program(p, argv, inherited, report_fd, ns, std::move(r), self);
  }
  // Where the kernel will not count the sandbox's processes (uid 0), init does, and keeps the
  // report descriptor to say why it ended them: the program closed its own copy before execve,
  // so nothing the candidate runs can write there.
  const bool counting = init_counts_processes(p, ns);
  if (report_fd >= 0 && !counting) ::close(report_fd);
  int status = 0;
  for (;;) {
    int st = 0;
    const pid_t w = ::waitpid(-1, &st, __WALL | (counting ? WNOHANG : 0));
    if (w == prog) {
      status = st;
      break;
    }
    if (w < 0 && errno != EINTR) fail(fmt::format("waitpid: {}", errno_text(errno)));
    if (w != 0) continue;
    if (const auto n = tasks_in_sandbox(); n > static_cast<std::size_t>(p.lim.processes)) {
      ::kill(-1, SIGKILL);
      const auto why = fmt::format("processes limit: the sandbox held {} processes and threads, over its limit of {}; "
                                   "all were ended", n, p.lim.processes);
      std::fprintf(stderr, "kforge-confine: %s\n", why.c_str());
      if (report_fd >= 0) write_all(report_fd, nlohmann::json{{"ended", why}, {"limit", "processes"}}.dump() + "\n");
      while (::waitpid(prog, &status, __WALL) < 0 && errno == EINTR) {}
      break;
    }
    const timespec period{0, init_count_period_ms * 1000000L};
    ::nanosleep(&period, nullptr);
  }
  if (report_fd >= 0 && counting) ::close(report_fd);
  kill_the_rest(ns.pid);
  write_all(status_w, std::string(reinterpret_cast<const char*>(&status), sizeof status));
  ::_exit(0);
}

// Ends this process the way `status` says the program ended.
[[noreturn]] void mirror(int status) {
  if (WIFEXITED(status)) ::_exit(WEXITSTATUS(status));
  const int sig = WTERMSIG(status);
  // The same signal, without a core file of kforge-confine (also for a core_pattern pipe).
  ::prctl(PR_SET_DUMPABLE, 0);
  const rlimit core{0, 0};
  ::setrlimit(RLIMIT_CORE, &core);
  ::signal(sig, SIG_DFL);
  sigset_t s;
  sigemptyset(&s);
  sigaddset(&s, sig);
  ::sigprocmask(SIG_UNBLOCK, &s, nullptr);
  ::raise(sig);
  ::_exit(128 + sig);  // a signal whose default is not to end the process
}

} // namespace

void run_confined(const policy& p, std::vector<std::string> argv, int report_fd) {
  if (argv.empty() || argv[0].find('/') == std::string::npos)
    fail("the program must be given by its path (kforge-confine does not search PATH)");
  // The program starts in the scratch dir: a relative path means the caller's directory.
  if (argv[0][0] != '/') {
    char cwd[4096];
    if (!::getcwd(cwd, sizeof cwd)) fail(fmt::format("getcwd: {}", errno_text(errno)));
    argv[0] = std::string(cwd) + "/" + argv[0];
  }
  if (report_fd >= 0 && ::fcntl(report_fd, F_GETFD) < 0)
    fail(fmt::format("--report-fd {}: {}", report_fd, errno_text(errno)));
  if (report_fd >= 0 && report_fd <= 2) fail("--report-fd must not be 0, 1 or 2");

  // kforge's own environment (API keys among it) would stay readable in /proc/<pid>/environ
  // of kforge-confine and its init: drop it; the program's comes from the policy.
  std::vector<std::string> inherited;
  if (skipped(p, "environment"))
    for (char** e = environ; *e; ++e) inherited.emplace_back(*e);
  ::clearenv();

  layer_report r;
  for (auto& n : layer_names()) r.push_back({n, false, "not applied"});
  namespace_state ns;
  std::string error;
  if (!enter_namespaces(p, ns, r, error)) fail(error);
  // Neither kforge-confine nor its init can then be traced or have its memory opened by a
  // process of the same uid (execve makes the program dumpable again). After the uid map:
  // a non-dumpable process's /proc/self files belong to root.
  ::prctl(PR_SET_DUMPABLE, 0);

  int status_p[2];
  if (::pipe2(status_p, O_CLOEXEC) != 0) fail(fmt::format("pipe: {}", errno_text(errno)));
  const int outer_pidfd = static_cast<int>(::syscall(SYS_pidfd_open, ::getpid(), 0));
  if (outer_pidfd >= 0) ::fcntl(outer_pidfd, F_SETFD, FD_CLOEXEC);
  const pid_t init = ::fork();
  if (init < 0) fail(fmt::format("fork: {}", errno_text(errno)));
  if (init == 0) {
    ::close(status_p[0]);
    run_init(p, argv, inherited, report_fd, ns, std::move(r), status_p[1], outer_pidfd);
  }
  if (outer_pidfd >= 0) ::close(outer_pidfd);
  ::close(status_p[1]);
  if (report_fd >= 0) ::close(report_fd);  // the reader sees EOF once the program has written

  int status = 0;
  std::size_t got = 0;
  while (got < sizeof status) {
    const ssize_t n = ::read(status_p[0], reinterpret_cast<char*>(&status) + got, sizeof status - got);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    got += static_cast<std::size_t>(n);
  }
  int init_status = 0;
  while (::waitpid(init, &init_status, 0) < 0 && errno == EINTR) {}
  if (got != sizeof status) {
    if (WIFSIGNALED(init_status))
      fail(fmt::format("the sandbox's init was killed by signal {} ({})", WTERMSIG(init_status),
                       strsignal(WTERMSIG(init_status))));
    // init failed before the program ran, and said why on stderr.
    ::_exit(WIFEXITED(init_status) ? WEXITSTATUS(init_status) : confine_failed);
  }
  mirror(status);
}

} // namespace kforge::sandbox
