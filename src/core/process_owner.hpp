#pragma once
// Who owns a piece of shared state (an evaluation row, a temporary build folder), told
// precisely enough that another process can later decide whether the owner is gone:
// a pid alone is not enough (pids are reused), so the owner is the pid with its start
// time (/proc/<pid>/stat field 22), on one boot of one host, in one PID namespace.
//   auto me = current_process_owner();          // store it with the row
//   if (owner_state(from_row) == owner_liveness::gone) mark_interrupted(row);
#include <cstdint>
#include <optional>
#include <string>

namespace kforge {

struct process_owner {
  std::string host;    // gethostname()
  std::string boot_id; // /proc/sys/kernel/random/boot_id: changes at every boot
  std::string pid_ns;  // readlink /proc/self/ns/pid, e.g. "pid:[4026531836]"
  int64_t pid = 0;
  uint64_t start_ticks = 0; // the process's start time, clock ticks after boot

  friend bool operator==(const process_owner&, const process_owner&) = default;
};

/// The calling process (recomputed after a fork: the pid is checked on each call).
[[nodiscard]] const process_owner& current_process_owner();

/// The start time of `pid` in clock ticks after boot; nullopt when there is no such
/// process, or it has exited and is only a zombie.
[[nodiscard]] std::optional<uint64_t> process_start_ticks(int64_t pid);

enum class owner_liveness {
  alive,   // the same process is still running
  gone,    // it ended: no such pid, a reused pid (other start time), or the host rebooted
  unknown, // another host or PID namespace: this process cannot see it, so cannot tell
};

/// @return whether `o` still runs, seen from the calling process.
[[nodiscard]] owner_liveness owner_state(const process_owner& o);

/// One line, "host boot_id pid_ns pid start_ticks", and back; nullopt for anything else.
[[nodiscard]] std::string to_string(const process_owner& o);
[[nodiscard]] std::optional<process_owner> parse_process_owner(const std::string& text);

} // namespace kforge
