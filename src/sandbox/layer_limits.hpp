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

/// How often init counts the sandbox's processes where it must (init_counts_processes).
inline constexpr int init_count_period_ms = 5;

/// Whether the sandbox's init must count processes itself: uid 0 is exempt from RLIMIT_NPROC,
/// and only in a PID namespace with its own /proc does init see exactly the sandbox's processes.
[[nodiscard]] bool init_counts_processes(const policy& p, const namespace_state& ns);

/// Threads of every process in this PID namespace but pid 1 (the sandbox's init), read from
/// /proc/<pid>/stat. Called by init, which sees the sandbox's /proc.
[[nodiscard]] std::size_t tasks_in_sandbox();

/// PR_SET_NO_NEW_PRIVS (unless skipped): no set-uid, set-gid or file capability gains on execve.
void apply_no_new_privs(const policy& p, layer_report& r);

/// Empties the bounding, ambient, inheritable, permitted and effective capability sets, so an
/// execve as uid 0 (root, or root of the user namespace) regains none. Appends to the
/// no_new_privs layer's detail what happened.
void drop_capabilities(layer_report& r);

/// "2.0 GiB", "512 MiB", "100 bytes".
[[nodiscard]] std::string bytes_text(std::uint64_t n);

} // namespace kforge::sandbox
