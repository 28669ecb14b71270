#pragma once
// The seccomp layer of kforge-confine, built with libseccomp. Default allow; refused with
// EPERM: ptrace and perf_event_open (except profile tool), process_vm_readv/writev,
// process_madvise, pidfd_getfd, kexec, bpf, keyrings, userfaultfd, io_uring, kernel modules,
// mounts (old and new API), pivot_root, chroot, setns, unshare, clock setting, iopl/ioperm,
// open_by_handle_at, reboot, swap, acct; clone with any CLONE_NEW* flag. clone3 fails with
// ENOSYS (glibc then falls back to clone, whose flags a filter can read). Refused with EACCES:
// socket() of any domain but AF_UNIX, AF_UNIX sockets other than stream/seqpacket (CUDA makes
// AF_UNIX SEQPACKET sockets, seen on the H200), connect() (a pathname socket such as
// /run/docker.sock is reachable through neither the network namespace nor Landlock) and
// sendto with an address. The tool profile (compute-sanitizer, ncu), which talks to its
// target: connect() where the host's sockets are hidden (namespace_state::private_tmp), and
// AF_INET/AF_INET6 sockets where the loopback is the sandbox's own (loopback_up). Part of
// kforge-confine only.
#include "sandbox/layer_namespaces.hpp"
#include "sandbox/policy.hpp"
#include "sandbox/report.hpp"

namespace kforge::sandbox::seccomp {

/// Loads the filter for p.profile into the calling thread (and what it runs). Does not set
/// no_new_privs itself: without it, loading needs CAP_SYS_ADMIN in the user namespace.
/// Sets the seccomp layer of `r`.
void apply(const policy& p, const namespace_state& ns, layer_report& r);

} // namespace kforge::sandbox::seccomp
