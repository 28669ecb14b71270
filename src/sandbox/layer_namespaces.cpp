#include "sandbox/layer_namespaces.hpp"

#include "sandbox/layer_limits.hpp"

#include <fmt/format.h>

#include <fcntl.h>
#include <sched.h>
#include <net/if.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <utility>
#include <vector>

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

// The tool profile's /tmp, /dev/shm and /run (setup_mounts). Paths of the policy beneath /tmp
// are opened before /tmp is covered, then bound back at the same place.
bool private_tmp(const policy& p, std::vector<std::string>& done, std::vector<std::string>& failed) {
  namespace fs = std::filesystem;
  const std::size_t failures = failed.size();
  std::vector<std::pair<fs::path, int>> keep;
  auto beneath_tmp = [](const fs::path& x) { return x.lexically_normal().string().rfind("/tmp/", 0) == 0; };
  std::vector<fs::path> named = p.read_paths;
  named.insert(named.end(), p.write_paths.begin(), p.write_paths.end());
  named.insert(named.end(), p.device_paths.begin(), p.device_paths.end());
  if (!p.scratch.empty()) named.push_back(p.scratch);
  for (auto& x : named)
    if (beneath_tmp(x))
      if (const int fd = ::open(x.c_str(), O_PATH | O_CLOEXEC); fd >= 0) keep.emplace_back(x.lexically_normal(), fd);
  const auto opts = fmt::format("size={},mode=1777", p.lim.scratch_bytes ? p.lim.scratch_bytes : 1ull << 30);
  for (const char* dir : {"/tmp", "/dev/shm"}) {
    struct stat st {};
    if (::lstat(dir, &st) != 0 || !S_ISDIR(st.st_mode)) continue; // nothing there to share or leak
    if (::mount("tmpfs", dir, "tmpfs", MS_NOSUID | MS_NODEV, opts.c_str()) != 0)
      failed.push_back(fmt::format("mount tmpfs on {}: {}", dir, errno_text(errno)));
  }
  for (auto& [x, fd] : keep) {
    struct stat st {};
    std::error_code ec;
    ::fstat(fd, &st);
    if (S_ISDIR(st.st_mode)) {
      fs::create_directories(x, ec);
    } else {
      fs::create_directories(x.parent_path(), ec);
      if (const int f = ::open(x.c_str(), O_CREAT | O_WRONLY | O_CLOEXEC, 0600); f >= 0) ::close(f);
    }
    const auto from = fmt::format("/proc/self/fd/{}", fd);
    if (::mount(from.c_str(), x.c_str(), nullptr, MS_BIND | MS_REC, nullptr) != 0)
      failed.push_back(fmt::format("bind {} back beneath the private /tmp: {}", x.string(), errno_text(errno)));
    ::close(fd);
  }
  for (const char* dir : {"/run", "/var/run"}) {
    struct stat st {};
    if (::lstat(dir, &st) != 0 || !S_ISDIR(st.st_mode)) continue; // /var/run is mostly a link to /run
    if (::mount("tmpfs", dir, "tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC | MS_RDONLY, "size=4k,mode=0755") != 0)
      failed.push_back(fmt::format("mount tmpfs on {}: {}", dir, errno_text(errno)));
  }
  const bool ok = failed.size() == failures;
  if (ok) done.push_back("for the tool: a private /tmp and /dev/shm (the policy's paths beneath /tmp bound back), the host's /run hidden");
  return ok;
}

// Inside a new network namespace (with CAP_NET_ADMIN over it): `lo` up.
bool bring_loopback_up(std::string& why) {
  const int s = ::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (s < 0) {
    why = "socket: " + errno_text(errno);
    return false;
  }
  ifreq ifr{};
  std::snprintf(ifr.ifr_name, sizeof ifr.ifr_name, "lo");
  bool ok = ::ioctl(s, SIOCGIFFLAGS, &ifr) == 0;
  if (ok) {
    ifr.ifr_flags = static_cast<short>(ifr.ifr_flags | IFF_UP | IFF_RUNNING);
    ok = ::ioctl(s, SIOCSIFFLAGS, &ifr) == 0;
  }
  if (!ok) why = "ioctl SIOCSIFFLAGS lo: " + errno_text(errno);
  ::close(s);
  return ok;
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
  if (ns.net && p.profile == syscall_profile::tool) {
    // compute-sanitizer and ncu talk to the target they start over sockets: a loopback of the
    // sandbox's own, which reaches no address outside it.
    std::string why;
    ns.loopback_up = bring_loopback_up(why);
    layer_at(r, "network_namespace").detail =
        ns.loopback_up ? "no network: only the sandbox's own loopback, up (the tool talks to its target over it)"
                       : "no network: only a loopback interface, down (bringing it up for the tool failed: " + why + ")";
  }
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
  if (p.profile == syscall_profile::tool) {
    // The tool and its target meet in /tmp and /dev/shm (shared memory, socket files): private
    // ones, so that the host's sockets there (an X server's, an ssh agent's) are out of reach
    // of a profile that may connect; what the policy names beneath /tmp is bound back. /run
    // holds more host sockets (a container runtime's): hidden.
    const bool ok = private_tmp(p, done, failed);
    ns.private_tmp = ok;
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
