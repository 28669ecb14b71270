#include "sandbox/layer_seccomp.hpp"

#include "sandbox/layer_namespaces.hpp"

#include <fmt/format.h>
#include <seccomp.h>

#include <sched.h>
#include <sys/socket.h>

#include <cerrno>
#include <initializer_list>
#include <string>
#include <vector>

namespace kforge::sandbox::seccomp {
namespace {

struct filter {
  scmp_filter_ctx ctx = nullptr;
  std::vector<std::string> failed;  // rules that could not be added
  int rules = 0;
  ~filter() {
    if (ctx) seccomp_release(ctx);
  }
  // Refuses `name` with `err` when the arguments match (no comparison: always).
  template <typename... Cmp>
  void refuse(const char* name, int err, Cmp... cmp) {
    const int nr = seccomp_syscall_resolve_name(name);
    if (nr == __NR_SCMP_ERROR) return;  // unknown to this libseccomp and architecture
    const int rc = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(err), nr, sizeof...(cmp), cmp...);
    if (rc == 0) ++rules;
    else if (rc != -EDOM) failed.push_back(fmt::format("{}: {}", name, errno_text(-rc)));  // EDOM: not on this arch
  }
};

} // namespace

void apply(const policy& p, const namespace_state& ns, layer_report& r) {
  auto& l = layer_at(r, "seccomp");
  if (skipped(p, "seccomp")) {
    l = {"seccomp", false, "skipped by the policy"};
    return;
  }
  filter f;
  f.ctx = seccomp_init(SCMP_ACT_ALLOW);
  if (!f.ctx) {
    l = {"seccomp", false, "seccomp_init failed"};
    return;
  }
  // no_new_privs is its own layer, set (or skipped) by the caller; libseccomp would set it.
  seccomp_attr_set(f.ctx, SCMP_FLTATR_CTL_NNP, 0);

  const bool tool = p.profile == syscall_profile::tool;
  // Other processes' memory, and ways around the rest of the sandbox.
  if (!tool) f.refuse("ptrace", EPERM);
  if (!tool) f.refuse("perf_event_open", EPERM);
  for (const char* n : {"process_vm_readv", "process_vm_writev", "process_madvise", "pidfd_getfd", "kexec_load",
                        "kexec_file_load", "bpf", "keyctl", "add_key", "request_key", "userfaultfd",
                        "io_uring_setup", "io_uring_enter", "io_uring_register", "mount", "umount2", "umount",
                        "pivot_root", "chroot", "setns", "unshare", "fsopen", "fsconfig", "fsmount", "fspick",
                        "move_mount", "open_tree", "mount_setattr", "init_module", "finit_module", "delete_module",
                        "reboot", "swapon", "swapoff", "acct", "settimeofday", "clock_settime", "clock_adjtime",
                        "adjtimex", "iopl", "ioperm", "open_by_handle_at", "name_to_handle_at", "quotactl",
                        "lookup_dcookie", "syslog", "vhangup", "fanotify_init", "nfsservctl", "uselib"})
    f.refuse(n, EPERM);
  // clone3 passes its flags in memory a filter cannot read: ENOSYS makes glibc use clone.
  f.refuse("clone3", ENOSYS);
  for (scmp_datum_t flag : std::initializer_list<scmp_datum_t>{CLONE_NEWNS, CLONE_NEWCGROUP, CLONE_NEWUTS, CLONE_NEWIPC,
                                                               CLONE_NEWUSER, CLONE_NEWPID, CLONE_NEWNET,
                                                               0x80 /* CLONE_NEWTIME */})
    f.refuse("clone", EPERM, SCMP_A0(SCMP_CMP_MASKED_EQ, flag, flag));
  // Sockets: AF_UNIX stream and seqpacket only (socketpair stays allowed). A tool talks to its
  // target: over TCP where the loopback is the sandbox's own, by connect() where no host socket
  // is left in sight.
  const bool inet = tool && ns.loopback_up, may_connect = tool && ns.private_tmp;
  if (inet) {
    for (scmp_datum_t domain = 0; domain < 64; ++domain)
      if (domain != AF_UNIX && domain != AF_INET && domain != AF_INET6) f.refuse("socket", EACCES, SCMP_A0(SCMP_CMP_EQ, domain));
  } else {
    f.refuse("socket", EACCES, SCMP_A0(SCMP_CMP_NE, AF_UNIX));
  }
  for (scmp_datum_t type = 0; type < 16; ++type)
    if (type != SOCK_STREAM && type != SOCK_SEQPACKET)  // SOCK_RAW on AF_UNIX is a datagram socket
      f.refuse("socket", EACCES, SCMP_A0(SCMP_CMP_EQ, AF_UNIX), SCMP_A1(SCMP_CMP_MASKED_EQ, 0xf, type));
  if (inet)
    for (scmp_datum_t type = 0; type < 16; ++type)
      if (type != SOCK_STREAM && type != SOCK_DGRAM)  // no raw sockets
        for (scmp_datum_t domain : {AF_INET, AF_INET6})
          f.refuse("socket", EACCES, SCMP_A0(SCMP_CMP_EQ, domain), SCMP_A1(SCMP_CMP_MASKED_EQ, 0xf, type));
  if (!may_connect) f.refuse("connect", EACCES);
  if (!inet) f.refuse("sendto", EACCES, SCMP_A4(SCMP_CMP_NE, 0));

  const int rc = seccomp_load(f.ctx);
  if (rc != 0) {
    l = {"seccomp", false, fmt::format("seccomp_load: {}", errno_text(-rc))};
    return;
  }
  std::string d = fmt::format(
      "profile {}: {} rules; refused: {}process_vm_*, kexec, bpf, keyrings, userfaultfd, io_uring, mounts, "
      "setns/unshare and new namespaces, modules, clock setting; {}",
      to_string(p.profile), f.rules, tool ? "" : "ptrace, perf_event_open, ",
      inet ? "sockets other than AF_UNIX stream/seqpacket and TCP/UDP (on the sandbox's own loopback); connect "
             "allowed (the host's sockets hidden)"
      : may_connect ? "sockets other than AF_UNIX stream/seqpacket, sendto to an address; connect allowed (the "
                      "host's sockets hidden)"
                    : "sockets other than AF_UNIX stream/seqpacket, connect, sendto to an address");
  if (!f.failed.empty()) {
    std::string fl;
    for (auto& s : f.failed) fl += (fl.empty() ? "" : ", ") + s;
    l = {"seccomp", false, d + "; rules that could not be added: " + fl};
    return;
  }
  l = {"seccomp", true, d};
}

} // namespace kforge::sandbox::seccomp
