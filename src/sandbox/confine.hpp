#pragma once
// kforge-confine's whole run: namespaces, the sandbox's init, the program with every layer
// applied, and the program's end mirrored as kforge-confine's own. Part of kforge-confine only.
//
//   outer (kforge-confine)          unshare user, net, mount, pid; waits; ends as the program did
//     └── init (pid 1 inside)       PDEATHSIG SIGKILL; private /proc, tmpfs scratch; reaps; kills
//           └── program             rlimits, env, cwd, no_new_privs, Landlock, seccomp, no caps;
//                                   writes the report; execve
#include "sandbox/policy.hpp"

#include <string>
#include <vector>

namespace kforge::sandbox {

/// Exit status of kforge-confine when it cannot run the program at all (bad policy or usage,
/// a required layer missing, a failure before execve). 127: execve itself failed.
inline constexpr int confine_failed = 125, exec_failed = 127;

/// Runs argv confined by `p`; writes {"layers": [...], "landlock_abi": n} and a newline on
/// report_fd (when >= 0) just before execve, then closes it. Ends the calling process exactly
/// as the program ended: the same exit code, or the same signal.
/// @pre the calling process is single-threaded; argv[0] holds a '/' (no PATH search); a
/// relative argv[0] is taken from the caller's working directory.
[[noreturn]] void run_confined(const policy& p, std::vector<std::string> argv, int report_fd);

} // namespace kforge::sandbox
