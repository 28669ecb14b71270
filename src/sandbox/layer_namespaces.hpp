#pragma once
// The namespace layers of kforge-confine: a user namespace (so the rest needs no privilege),
// then network, mount and PID namespaces, each tried on its own so the report can say which
// one the machine refused and why. Part of kforge-confine only.
#include "sandbox/policy.hpp"
#include "sandbox/report.hpp"

#include <string>

namespace kforge::sandbox {

struct namespace_state {
  bool user = false, net = false, mount = false, pid = false;
  bool host_root = false;  // the real uid outside is 0
  bool private_proc = false; // /proc lists the sandbox's processes only (set by setup_mounts)
  // The tool profile's ways to talk to its target (compute-sanitizer, ncu): the network
  // namespace's own loopback up, and a private /tmp and /dev/shm with the host's /run hidden.
  bool loopback_up = false;
  bool private_tmp = false;
};

/// Unshares, in this order, CLONE_NEWUSER (then maps the caller's own uid and gid, and denies
/// setgroups), CLONE_NEWNET, CLONE_NEWNS, CLONE_NEWPID (which takes effect for the next child:
/// the sandbox's init). Skipped layers are not tried. For the tool profile the new network
/// namespace's loopback is brought up (its own, reaching nothing outside). Sets the four namespace layers of `r`.
/// @return false, with `error` set, when a user namespace was made but its uid map could not
/// be written (the process would run as the overflow uid): the caller must not go on.
[[nodiscard]] bool enter_namespaces(const policy& p, namespace_state& ns, layer_report& r, std::string& error);

/// Run by the sandbox's init, before it starts the program: makes every mount private, mounts a
/// fresh /proc (only the sandbox's processes) when in a new PID namespace, and a tmpfs of
/// lim.scratch_bytes on the scratch directory; for the tool profile, a private tmpfs on /tmp
/// and /dev/shm and an empty read-only one on /run (no host socket left to connect to).
/// Updates mount_namespace and pid_namespace in `r`.
void setup_mounts(const policy& p, namespace_state& ns, layer_report& r);

/// "Operation not permitted" for errno EPERM: the text reports carry.
[[nodiscard]] std::string errno_text(int e);
/// Whether the policy asks to skip `name`.
[[nodiscard]] bool skipped(const policy& p, const std::string& name);

} // namespace kforge::sandbox
