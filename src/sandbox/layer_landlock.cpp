#include "sandbox/layer_landlock.hpp"

#include "sandbox/layer_namespaces.hpp"

#include <fmt/format.h>

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>

namespace kforge::sandbox::landlock {
namespace {

// The kernel's structures (include/uapi/linux/landlock.h, ABI 6).
struct ruleset_attr {
  std::uint64_t handled_access_fs;
  std::uint64_t handled_access_net;
  std::uint64_t scoped;
};
struct __attribute__((packed)) path_beneath_attr {
  std::uint64_t allowed_access;
  std::int32_t parent_fd;
};
constexpr int rule_path_beneath = 1;
constexpr unsigned create_ruleset_version = 1u << 0;

long create_ruleset(const ruleset_attr* a, std::size_t size, unsigned flags) {
  return ::syscall(444, a, size, flags);
}
long add_rule(int fd, int type, const void* attr) { return ::syscall(445, fd, type, attr, 0u); }
long restrict_self(int fd) { return ::syscall(446, fd, 0u); }

struct rule_counts {
  int added = 0;
  std::vector<std::string> absent, failed;
};

// Allows `access` beneath `path` (or on that file). A path that does not exist is skipped:
// less access, never more.
void allow(int ruleset, const std::filesystem::path& path, std::uint64_t access, std::uint64_t handled,
           rule_counts& c) {
  const int fd = ::open(path.c_str(), O_PATH | O_CLOEXEC);
  if (fd < 0) {
    if (errno == ENOENT || errno == ENOTDIR) c.absent.push_back(path.string());
    else c.failed.push_back(fmt::format("{}: {}", path.string(), errno_text(errno)));
    return;
  }
  struct stat st {};
  if (::fstat(fd, &st) == 0 && !S_ISDIR(st.st_mode)) access &= file_rights;
  path_beneath_attr a{access & handled, fd};
  if (a.allowed_access == 0) {
    ::close(fd);
    return;
  }
  if (add_rule(ruleset, rule_path_beneath, &a) == 0) ++c.added;
  else c.failed.push_back(fmt::format("{}: {}", path.string(), errno_text(errno)));
  ::close(fd);
}

std::string list(const std::vector<std::string>& v) {
  std::string s;
  for (auto& x : v) s += (s.empty() ? "" : ", ") + x;
  return s;
}

} // namespace

std::uint64_t fs_rights_of_abi(int abi) {
  if (abi < 1) return 0;
  std::uint64_t r = (1ull << 13) - 1;  // ABI 1: execute .. make_sym
  if (abi >= 2) r |= refer;
  if (abi >= 3) r |= truncate;
  if (abi >= 5) r |= ioctl_dev;
  return r;
}

void apply(const policy& p, const namespace_state& ns, layer_report& r) {
  auto& lfs = layer_at(r, "landlock_filesystem");
  auto& lnet = layer_at(r, "landlock_network");
  auto& lscope = layer_at(r, "landlock_scope");
  const bool want_fs = !skipped(p, "landlock_filesystem"), want_net = !skipped(p, "landlock_network"),
             want_scope = !skipped(p, "landlock_scope");
  lfs = {"landlock_filesystem", false, want_fs ? "" : "skipped by the policy"};
  lnet = {"landlock_network", false, want_net ? "" : "skipped by the policy"};
  lscope = {"landlock_scope", false, want_scope ? "" : "skipped by the policy"};
  if (!want_fs && !want_net && !want_scope) return;

  const long abi = create_ruleset(nullptr, 0, create_ruleset_version);
  if (abi < 0) {
    const auto why = fmt::format("Landlock unavailable: {}{}", errno_text(errno),
                                 errno == EOPNOTSUPP ? " (disabled at boot: add landlock to lsm=)"
                                 : errno == ENOSYS   ? " (kernel older than 5.13 or built without it)"
                                                     : "");
    for (auto* l : {&lfs, &lnet, &lscope})
      if (l->detail.empty()) l->detail = why;
    return;
  }
  ruleset_attr attr{};
  attr.handled_access_fs = want_fs ? fs_rights_of_abi(static_cast<int>(abi)) : 0;
  // A tool talks TCP to its target on the sandbox's own loopback (ports of its choosing): the
  // network namespace, not Landlock, keeps every other address out.
  const bool tool_tcp = p.profile == syscall_profile::tool && ns.loopback_up;
  if (want_net && tool_tcp)
    lnet.detail = "not applied for the tool (compute-sanitizer, ncu): it talks TCP to its target on the sandbox's own "
                  "loopback; the network namespace keeps every other address out";
  else if (want_net && abi >= 4) attr.handled_access_net = net_bind_tcp | net_connect_tcp;
  if (want_scope && abi >= 6) attr.scoped = scope_abstract_unix_socket | scope_signal;
  if (want_net && !tool_tcp && abi < 4) lnet.detail = fmt::format("Landlock ABI {}: no TCP rules (needs ABI 4)", abi);
  if (want_scope && abi < 6)
    lscope.detail = fmt::format("Landlock ABI {}: no signal or abstract socket scoping (needs ABI 6)", abi);
  if (!attr.handled_access_fs && !attr.handled_access_net && !attr.scoped) return;

  // Older kernels reject a larger struct only when the fields they do not know are non-zero.
  const std::size_t size = abi >= 6 ? sizeof(ruleset_attr) : abi >= 4 ? 16 : 8;
  const int rs = static_cast<int>(create_ruleset(&attr, size, 0));
  if (rs < 0) {
    const auto why = fmt::format("landlock_create_ruleset: {}", errno_text(errno));
    for (auto* l : {&lfs, &lnet, &lscope})
      if (l->detail.empty()) l->detail = why;
    return;
  }

  const std::uint64_t handled = attr.handled_access_fs;
  rule_counts c;
  if (handled) {
    const std::uint64_t read = execute | read_file | read_dir;
    const std::uint64_t device = read_file | write_file | truncate | ioctl_dev;
    for (auto& path : p.read_paths) allow(rs, path, read, handled, c);
    for (auto& path : p.write_paths) allow(rs, path, handled, handled, c);
    for (auto& path : p.device_paths) {
      struct stat st {};
      const bool dir = ::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
      allow(rs, path, dir ? device | read_dir : device, handled, c);
    }
    if (!p.scratch.empty()) allow(rs, p.scratch, handled, handled, c);
    // The tool profile's private /tmp and /dev/shm (tmpfs of the sandbox's own, setup_mounts).
    if (p.profile == syscall_profile::tool && ns.private_tmp)
      for (const char* dir : {"/tmp", "/dev/shm"}) allow(rs, dir, handled, handled, c);
    // Other processes' entries stay out of reach through Landlock's ptrace scoping (and, with
    // the sandbox's own /proc, out of sight); CUDA reads /proc/driver/nvidia, /proc/cpuinfo, ...
    allow(rs, "/proc", read_file | read_dir, handled, c);
    // Opened here, after the remount: the sandbox's /proc/<own pid>. CUDA names its threads
    // through /proc/self/task/<tid>/comm (fopen "wb": write and truncate).
    const std::uint64_t proc_write = read_file | write_file | truncate | read_dir;
    if (p.profile == syscall_profile::tool && ns.private_proc && p.proc_self_write)
      // A tool's target is its child, whose /proc/<pid> does not exist yet: the sanitizer's
      // injected library fails CUDA's initialisation (error 304) when it cannot name its
      // threads (H200, 2026-12-04). Only the sandbox's own processes are in this /proc.
      allow(rs, "/proc", proc_write, handled, c);
    else if (p.proc_self_write)
      allow(rs, "/proc/self", proc_write, handled, c);
    allow(rs, "/sys", read_file | read_dir, handled, c);
  }

  if (restrict_self(rs) != 0) {
    const auto why = fmt::format("landlock_restrict_self: {}", errno_text(errno));
    ::close(rs);
    for (auto* l : {&lfs, &lnet, &lscope})
      if (l->detail.empty()) l->detail = why;
    return;
  }
  ::close(rs);

  if (handled) {
    std::string d = fmt::format("ABI {}: read+execute beneath {} read path(s), every right beneath {} write path(s){}, "
                                "read/write/ioctl on {} device path(s); /proc and /sys read-only{}; nothing else",
                                abi, p.read_paths.size(), p.write_paths.size(),
                                std::string(p.scratch.empty() ? "" : " and scratch") +
                                    (p.profile == syscall_profile::tool && ns.private_tmp ? ", the private /tmp and /dev/shm" : ""),
                                p.device_paths.size(),
                                !p.proc_self_write                                   ? ""
                                : p.profile == syscall_profile::tool && ns.private_proc ? " but the sandbox's own /proc writable"
                                                                                        : " but beneath /proc/self");
    if (!c.absent.empty()) d += "; absent, skipped: " + list(c.absent);
    // A rule that failed grants less, never more: the layer is still in force.
    if (!c.failed.empty()) d += "; rules not added (less access): " + list(c.failed);
    lfs = {"landlock_filesystem", true, d};
  }
  if (attr.handled_access_net) lnet = {"landlock_network", true, fmt::format("ABI {}: TCP bind and connect refused", abi)};
  if (attr.scoped)
    lscope = {"landlock_scope", true,
              fmt::format("ABI {}: no signal to, no abstract unix socket of, and (any ABI) no ptrace, /proc/<pid>/mem or "
                          "environ of a process outside the sandbox",
                          abi)};
}

} // namespace kforge::sandbox::landlock
