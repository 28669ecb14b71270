#include "sandbox/layer_limits.hpp"

#include <fmt/format.h>

#include <linux/capability.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
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
    if (ns.host_root)
      missing.push_back("RLIMIT_NPROC not enforced: the kernel exempts uid 0 (root), in a user namespace too");
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
