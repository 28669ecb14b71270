#pragma once
// The process layers of kforge-confine that need no kernel feature: resource limits,
// no_new_privs with every capability dropped. Part of kforge-confine only.
#include "sandbox/layer_namespaces.hpp"
#include "sandbox/policy.hpp"
#include "sandbox/report.hpp"

namespace kforge::sandbox {

/// setrlimit for p.lim (RLIMIT_DATA, RLIMIT_NPROC, RLIMIT_FSIZE, RLIMIT_CPU with hard = soft + 5 s)
/// and RLIMIT_CORE 0 always (a core file would carry the process's memory to disk).
/// The layer is active when every limit the policy asks for is enforced; RLIMIT_NPROC is not
/// for uid 0 (the kernel exempts root, in a user namespace too), and that is said.
void apply_limits(const policy& p, const namespace_state& ns, layer_report& r);

/// PR_SET_NO_NEW_PRIVS (unless skipped): no set-uid, set-gid or file capability gains on execve.
void apply_no_new_privs(const policy& p, layer_report& r);

/// Empties the bounding, ambient, inheritable, permitted and effective capability sets, so an
/// execve as uid 0 (root, or root of the user namespace) regains none. Appends to the
/// no_new_privs layer's detail what happened.
void drop_capabilities(layer_report& r);

/// "2.0 GiB", "512 MiB", "100 bytes".
[[nodiscard]] std::string bytes_text(std::uint64_t n);

} // namespace kforge::sandbox
