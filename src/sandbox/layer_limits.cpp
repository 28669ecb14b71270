#include "sandbox/layer_limits.hpp"

#include <fmt/format.h>

#include <linux/capability.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <dirent.h>
#include <fcntl.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <cmath>
#include <fstream>

namespace kforge::sandbox {

std::string bytes_text(std::uint64_t n) {
  if (n >= (1ull << 30) && n % (1ull << 30) == 0) return fmt::format("{} GiB", n >> 30);
  if (n >= (1ull << 30)) return fmt::format("{:.1f} GiB", static_cast<double>(n) / (1ull << 30));
  if (n >= (1ull << 20)) return fmt::format("{:.0f} MiB", static_cast<double>(n) / (1ull << 20));
  return fmt::format("{} bytes", n);
}

void apply_limits(const policy& p, const namespace_state& ns, layer_report& r) {
  auto& l = layer_at(r, "limits");
  const rlimit core{0, 0};
  ::setrlimit(RLIMIT_CORE, &core);
  if (skipped(p, "limits")) {
    l = {"limits", false, "skipped by the policy (core dumps still off)"};
    return;
  }
  std::vector<std::string> set, missing;
  auto limit = [&](int res, const char* name, rlim_t soft, rlim_t hard, const std::string& text) {
    const rlimit rl{soft, hard};
    if (::setrlimit(res, &rl) == 0) set.push_back(text);
    else missing.push_back(fmt::format("setrlimit({}): {}", name, errno_text(errno)));
  };
  const auto& lim = p.lim;
  if (lim.memory_bytes) limit(RLIMIT_DATA, "RLIMIT_DATA", lim.memory_bytes, lim.memory_bytes, "memory " + bytes_text(lim.memory_bytes));
  else set.push_back("memory unlimited");
  if (lim.processes) {
    // In a user namespace the count is the sandbox's alone, kforge-confine and its init included:
    // two more, so that `processes` is what the program and its descendants may have.
    const rlim_t n = static_cast<rlim_t>(lim.processes) + (ns.user ? 2 : 0);
    limit(RLIMIT_NPROC, "RLIMIT_NPROC", n, n, fmt::format("processes {} (threads included)", lim.processes));
    if (init_counts_processes(p, ns))
      set.back() += fmt::format(": the kernel exempts uid 0 from RLIMIT_NPROC, so the sandbox's init counts them "
                                "every {} ms and ends them all past the limit", init_count_period_ms);
    else if (ns.host_root)
      missing.push_back("RLIMIT_NPROC not enforced: the kernel exempts uid 0 (root), in a user namespace too, "
                        "and without a PID namespace and a /proc of its own the sandbox's init cannot count them");
    else if (!ns.user)
      set.back() += fmt::format(" (counting every process of uid {}: no user namespace)", ::getuid());
  } else {
    set.push_back("processes unlimited");
  }
  if (lim.file_bytes) limit(RLIMIT_FSIZE, "RLIMIT_FSIZE", lim.file_bytes, lim.file_bytes, "file " + bytes_text(lim.file_bytes));
  else set.push_back("file size unlimited");
  if (lim.cpu_s > 0) {
    const auto s = static_cast<rlim_t>(std::ceil(lim.cpu_s));
    limit(RLIMIT_CPU, "RLIMIT_CPU", s, s + 5, fmt::format("cpu {} s", s));
  } else {
    set.push_back("cpu unlimited");
  }
  set.push_back("no core dumps");
  std::string d;
  for (auto& s : set) d += (d.empty() ? "" : ", ") + s;
  for (auto& s : missing) d += "; " + s;
  l = {"limits", missing.empty(), d};
}

bool init_counts_processes(const policy& p, const namespace_state& ns) {
  // Only a /proc of the sandbox's own processes tells init what to count.
  return ns.host_root && ns.pid && ns.private_proc && p.lim.processes > 0 && !skipped(p, "limits");
}

std::size_t tasks_in_sandbox() {
  std::size_t n = 0;
  DIR* d = ::opendir("/proc");
  if (!d) return 0;
  while (dirent* e = ::readdir(d)) {
    if (e->d_name[0] < '1' || e->d_name[0] > '9' || std::strcmp(e->d_name, "1") == 0) continue;
    char path[300];
    std::snprintf(path, sizeof path, "/proc/%s/stat", e->d_name);
    const int fd = ::open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) continue; // it ended meanwhile
    char buf[1024];
    const ssize_t got = ::read(fd, buf, sizeof buf - 1);
    ::close(fd);
    if (got <= 0) continue;
    buf[got] = 0;
    // After the command name (which may hold spaces and parentheses): field 3 is the state,
    // field 20 num_threads.
    const char* c = std::strrchr(buf, ')');
    if (!c) continue;
    int field = 2;
    for (const char* q = c + 1; *q; ++q)
      if (*q == ' ' && ++field == 20) {
        n += static_cast<std::size_t>(std::strtoul(q + 1, nullptr, 10));
        break;
      }
  }
  ::closedir(d);
  return n;
}

void apply_no_new_privs(const policy& p, layer_report& r) {
  auto& l = layer_at(r, "no_new_privs");
  if (skipped(p, "no_new_privs")) {
    l = {"no_new_privs", false, "skipped by the policy"};
    return;
  }
  if (::prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0)
    l = {"no_new_privs", false, fmt::format("prctl(PR_SET_NO_NEW_PRIVS): {}", errno_text(errno))};
  else
    l = {"no_new_privs", true, "no privilege gained through execve (set-uid, file capabilities)"};
}

void drop_capabilities(layer_report& r) {
  auto& l = layer_at(r, "no_new_privs");
  int last = CAP_LAST_CAP;
  if (std::ifstream f("/proc/sys/kernel/cap_last_cap"); f) f >> last;
  bool bounding = true;
  for (int c = 0; c <= last; ++c)
    if (::prctl(PR_CAPBSET_DROP, c, 0, 0, 0) != 0 && errno != EINVAL) bounding = false;
  ::prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0);
  __user_cap_header_struct hdr{_LINUX_CAPABILITY_VERSION_3, 0};
  __user_cap_data_struct data[2]{};
  const bool sets = ::syscall(SYS_capset, &hdr, data) == 0;
  std::string d = bounding && sets ? "all capabilities dropped"
                  : sets           ? "capabilities dropped; the bounding set kept (no CAP_SETPCAP)"
                                   : fmt::format("capabilities not dropped: capset: {}", errno_text(errno));
  l.detail += (l.detail.empty() ? "" : "; ") + d;
}

} // namespace kforge::sandbox
