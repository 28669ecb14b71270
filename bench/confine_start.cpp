// What confinement costs per process start: a trivial program started and waited for N times,
// plain and under kforge-confine (every layer; then without the namespaces), with a worker's
// policy. Prints a table of milliseconds per start.
//   build/bench/bench_confine_start [N=50] [program=/bin/true]
// kforge-confine: $KFORGE_CONFINE, else beside this program (dist/), else in the folder above (build/).
#include "core/fs.hpp"
#include "sandbox/launch.hpp"
#include "sandbox/report.hpp"

#include <fmt/format.h>

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

extern char** environ;

namespace {

using clock_type = std::chrono::steady_clock;

// Starts argv with the write end of a pipe as fd 3, reads the pipe to its end, waits.
int run_once(const std::vector<std::string>& argv) {
  int p[2];
  if (::pipe2(p, O_CLOEXEC) != 0) return -1;
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_adddup2(&fa, p[1], 3);
  std::vector<char*> a;
  for (auto& s : argv) a.push_back(const_cast<char*>(s.c_str()));
  a.push_back(nullptr);
  pid_t pid = -1;
  const int rc = ::posix_spawn(&pid, a[0], &fa, nullptr, a.data(), environ);
  posix_spawn_file_actions_destroy(&fa);
  ::close(p[1]);
  if (rc != 0) {
    ::close(p[0]);
    return -1;
  }
  char buf[4096];
  while (::read(p[0], buf, sizeof buf) > 0) {}
  ::close(p[0]);
  int st = 0;
  ::waitpid(pid, &st, 0);
  return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

struct row {
  std::string name;
  std::vector<double> ms;
};

row measure(const std::string& name, const std::vector<std::string>& argv, int n) {
  row r{name, {}};
  run_once(argv);  // warm the page cache
  for (int i = 0; i < n; ++i) {
    const auto t0 = clock_type::now();
    if (run_once(argv) != 0) {
      fmt::print(stderr, "bench_confine_start: {} failed\n", name);
      std::exit(1);
    }
    r.ms.push_back(std::chrono::duration<double, std::milli>(clock_type::now() - t0).count());
  }
  std::sort(r.ms.begin(), r.ms.end());
  return r;
}

} // namespace

int main(int argc, char** argv) {
  using namespace kforge;
  const int n = argc > 1 ? std::atoi(argv[1]) : 50;
  if (!std::getenv("KFORGE_CONFINE") && !std::filesystem::exists(sandbox::confine_exe()))
    ::setenv("KFORGE_CONFINE", (self_exe().parent_path().parent_path() / "kforge-confine").c_str(), 1);
  std::string prog = argc > 2 ? argv[2] : find_on_path("true").string();
  if (prog.empty()) prog = "/bin/true";

  sandbox::policy p;
  p.read_paths = sandbox::system_read_paths();
  p.device_paths = sandbox::default_device_paths();
  sandbox::scratch_dir scratch;
  p.scratch = scratch.path();
  p.env = {{"PATH", "/usr/bin:/bin"}};
  p.lim = {8ull << 30, 256, 1ull << 30, 600, 256ull << 20};
  auto no_ns = p;
  no_ns.skip = {"user_namespace", "pid_namespace", "network_namespace", "mount_namespace"};

  std::vector<row> rows;
  rows.push_back(measure("plain", {prog}, n));
  rows.push_back(measure("confined, every layer", sandbox::confined_argv(p, {prog}, 3), n));
  rows.push_back(measure("confined, no namespaces", sandbox::confined_argv(no_ns, {prog}, 3), n));

  fmt::print("start + exit of {}, {} times each (ms per start)\n", prog, n);
  fmt::print("{:<26} {:>8} {:>8} {:>8} {:>8}\n", "", "mean", "median", "p90", "max");
  for (auto& r : rows) {
    double sum = 0;
    for (double v : r.ms) sum += v;
    fmt::print("{:<26} {:>8.2f} {:>8.2f} {:>8.2f} {:>8.2f}\n", r.name, sum / r.ms.size(), r.ms[r.ms.size() / 2],
               r.ms[r.ms.size() * 9 / 10], r.ms.back());
  }
  double base = 0, full = 0;
  for (double v : rows[0].ms) base += v;
  for (double v : rows[1].ms) full += v;
  fmt::print("confinement costs {:.2f} ms per start (mean, every layer; target <= 30 ms)\n", (full - base) / n);
  return 0;
}
