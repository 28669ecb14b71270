#pragma once
// Runs a command to completion, capturing its output; used for compilers and tools.
// (The evaluation worker has its own launcher in worker/, with a result channel.)
//   auto r = run_command({"g++", "--version"});  if (r.exit_code == 0) ... r.output ...
#include <sys/types.h>

#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace kforge {

struct command_result {
  int exit_code = -1;       // valid when !signaled && !timed_out
  int signal = 0;           // the terminating signal, when signaled
  bool signaled = false;
  bool timed_out = false;
  std::string output;       // stdout and stderr interleaved, truncated to max_output bytes
  double duration_s = 0.0;
  [[nodiscard]] bool ok() const { return !signaled && !timed_out && exit_code == 0; }
};

/// @pre argv non-empty; argv[0] is looked up on PATH.
/// @throws kforge::error (internal) only when the process cannot be started at all.
[[nodiscard]] command_result run_command(const std::vector<std::string>& argv, double timeout_s = 600.0,
                                         std::size_t max_output = 1 << 20);

/// Starts argv (argv[0] looked up on PATH) in a process group of its own, so that a kill of
/// -pid ends whatever it starts too. In the child, descriptor `to` of each {from, to} pair
/// is a copy of `from`; stdin is /dev/null unless a pair sets descriptor 0.
/// @return its pid. @throws kforge::error (internal) "cannot run 'argv[0]': reason".
[[nodiscard]] pid_t spawn_in_own_group(const std::vector<std::string>& argv,
                                       const std::vector<std::pair<int, int>>& descriptors);

/// Writes all of `bytes` to `fd`, retrying when a signal interrupts.
/// @return false when the reader is gone (or another write error): what was written stays written.
[[nodiscard]] bool write_all(int fd, std::string_view bytes);

/// Joins argv into a shell-readable line, for logs and the build record.
[[nodiscard]] std::string join_command(const std::vector<std::string>& argv);

} // namespace kforge
