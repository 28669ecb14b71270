#include "sandbox/layer_namespaces.hpp"

#include "sandbox/layer_limits.hpp"

#include <fmt/format.h>

#include <fcntl.h>
#include <sched.h>
#include <sys/mount.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace kforge::sandbox {

std::string errno_text(int e) { return std::strerror(e); }

bool skipped(const policy& p, const std::string& name) {
  return std::find(p.skip.begin(), p.skip.end(), name) != p.skip.end();
}

namespace {

// Writes `text` to a /proc file in one write, as the kernel wants for uid_map.
bool write_proc(const char* path, const std::string& text, std::string& error) {
  const int fd = ::open(path, O_WRONLY | O_CLOEXEC);
  if (fd < 0) {
    error = fmt::format("open {}: {}", path, errno_text(errno));
    return false;
  }
  const bool ok = ::write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size());
  if (!ok) error = fmt::format("write {}: {}", path, errno_text(errno));
  ::close(fd);
  return ok;
}

// unshare(flag) for the layer `name`, unless skipped; the outcome goes into the report.
bool try_unshare(const policy& p, int flag, const char* flag_name, const std::string& name, const std::string& what,
                 layer_report& r) {
  auto& l = layer_at(r, name);
  if (skipped(p, name)) {
    l = {name, false, "skipped by the policy"};
    return false;
  }
  if (::unshare(flag) != 0) {
    l = {name, false, fmt::format("unshare({}): {}", flag_name, errno_text(errno))};
    return false;
  }
  l = {name, true, what};
  return true;
}

} // namespace

bool enter_namespaces(const policy& p, namespace_state& ns, layer_report& r, std::string& error) {
  const uid_t uid = ::getuid();
  const gid_t gid = ::getgid();
  ns.host_root = uid == 0;
  ns.user = try_unshare(p, CLONE_NEWUSER, "CLONE_NEWUSER", "user_namespace",
                        fmt::format("uid {} and gid {} mapped to themselves; capabilities only inside it", uid, gid), r);
  if (ns.user) {
    // setgroups must be denied before an unprivileged process may write gid_map.
    std::string e;
    if (!write_proc("/proc/self/setgroups", "deny", e) ||
        !write_proc("/proc/self/uid_map", fmt::format("{} {} 1", uid, uid), e) ||
        !write_proc("/proc/self/gid_map", fmt::format("{} {} 1", gid, gid), e)) {
      error = "user namespace made but its id maps could not be written: " + e;
      return false;
    }
  }
  ns.net = try_unshare(p, CLONE_NEWNET, "CLONE_NEWNET", "network_namespace",
                       "no network: only a loopback interface, down", r);
  ns.mount = try_unshare(p, CLONE_NEWNS, "CLONE_NEWNS", "mount_namespace", "mounts private to the sandbox", r);
  ns.pid = try_unshare(p, CLONE_NEWPID, "CLONE_NEWPID", "pid_namespace",
                       "sees and signals only its own processes; all of them end with the program", r);
  return true;
}

void setup_mounts(const policy& p, namespace_state& ns, layer_report& r) {
  auto& mnt = layer_at(r, "mount_namespace");
  auto& pid = layer_at(r, "pid_namespace");
  if (!ns.mount) {
    if (ns.pid) pid.detail += "; /proc still lists the host's processes (no mount namespace to remount it in)";
    return;
  }
  std::vector<std::string> done, failed;
  if (::mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0) {
    // Without this, the mounts below would propagate to the host.
    mnt = {"mount_namespace", false, fmt::format("mount --make-rprivate /: {}", errno_text(errno))};
    return;
  }
  if (ns.pid) {
    if (::mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, nullptr) == 0) {
      done.push_back("a /proc of the sandbox's processes only");
      ns.private_proc = true;
    } else {
      failed.push_back(fmt::format("mount proc on /proc: {} (the host's processes stay listed)", errno_text(errno)));
      pid.detail += "; /proc still lists the host's processes";
    }
  }
  if (!p.scratch.empty() && p.lim.scratch_bytes > 0) {
    const auto opts = fmt::format("size={},mode=0700", p.lim.scratch_bytes);
    if (::mount("tmpfs", p.scratch.c_str(), "tmpfs", MS_NOSUID | MS_NODEV, opts.c_str()) == 0)
      done.push_back(fmt::format("a private tmpfs of {} on the scratch dir", bytes_text(p.lim.scratch_bytes)));
    else
      failed.push_back(fmt::format("mount tmpfs on {}: {}", p.scratch.string(), errno_text(errno)));
  }
  std::string d = "mounts private to the sandbox";
  for (auto& s : done) d += "; " + s;
  for (auto& s : failed) d += "; " + s;
  mnt = {"mount_namespace", failed.empty(), d};
}

} // namespace kforge::sandbox
