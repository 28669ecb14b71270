#pragma once
// How the parent starts a program confined: through kforge-confine, which applies the policy,
// reports the layers in force on `report_fd`, runs the program, and ends exactly as it did.
//   sandbox::scratch_dir scratch;                      // private dir, removed afterwards
//   p.scratch = scratch.path();
//   auto argv = sandbox::confined_argv(p, {"/usr/bin/g++", "-c", "k.cpp"}, 4);
//   // fork; dup2(report_pipe_write, 4); execv(argv[0], argv); read one JSON line from the pipe
#include "sandbox/policy.hpp"

#include <filesystem>
#include <string>
#include <vector>

namespace kforge::sandbox {

/// @return $KFORGE_CONFINE when set, else "kforge-confine" beside the running executable,
/// beside $KFORGE_WORKER, or where this build put it (whichever exists first).
[[nodiscard]] std::filesystem::path confine_exe();

/// {confine_exe(), "--policy", to_json(p).dump(), "--report-fd", std::to_string(report_fd), "--", argv...};
/// report_fd < 0: no report (no --report-fd).
/// @pre !argv.empty(); argv[0] is an absolute path (kforge-confine does not search PATH).
[[nodiscard]] std::vector<std::string> confined_argv(const policy& p, const std::vector<std::string>& argv,
                                                     int report_fd);

/// KFORGE_SANDBOX=off turns confinement off (debugging only).
/// @return the reason text to record in its place, else "".
[[nodiscard]] std::string disabled_reason();

/// A private directory for one confined process: mkdtemp under $TMPDIR (or /tmp), mode 0700,
/// removed recursively when destroyed. Removal never follows a symlink, so a link the
/// confined program left behind cannot make kforge delete what it points to.
class scratch_dir {
public:
  /// @throws kforge::error (internal) naming the directory when it cannot be made.
  scratch_dir();
  ~scratch_dir();
  scratch_dir(const scratch_dir&) = delete;
  scratch_dir& operator=(const scratch_dir&) = delete;
  scratch_dir(scratch_dir&& o) noexcept;
  scratch_dir& operator=(scratch_dir&& o) noexcept;
  [[nodiscard]] const std::filesystem::path& path() const { return m_path; }

private:
  std::filesystem::path m_path;
};

/// Removes `p` and everything beneath it without following symlinks (openat/unlinkat with
/// O_NOFOLLOW); a directory the program made unreadable is made readable first.
/// @return false when something could not be removed.
bool remove_tree(const std::filesystem::path& p) noexcept;

} // namespace kforge::sandbox
