#pragma once
// What a confined process may touch: the policy kforge-confine applies before it runs a
// program that runs candidate code (a worker) or reads candidate source (a compiler).
//   sandbox::policy p;  p.read_paths = sandbox::system_read_paths();  p.scratch = dir.path();
//   p.env = {{"PATH", "/usr/bin:/bin"}};  p.lim.memory_bytes = 8ull << 30;
//   auto argv = sandbox::confined_argv(p, {worker, "--job"}, 4);   // launch.hpp
// The policy travels to kforge-confine as JSON (to_json / policy_from_json): a path or an
// environment value that is not UTF-8 travels as {"hex": "<its bytes>"}, so nothing is lost.
#include <nlohmann/json.hpp>

#include <cstdint>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

namespace kforge::sandbox {

/// Which system calls the seccomp filter refuses (layer_seccomp.hpp lists them).
/// tool: compute-sanitizer/ncu drive their child with ptrace and read its counters.
enum class syscall_profile { worker, compiler, tool };

struct limits {
  std::uint64_t memory_bytes = 0;   // RLIMIT_DATA (private writable memory; CUDA device/pinned memory is not counted, seen on the H200); 0 = none
  int processes = 0;                // RLIMIT_NPROC: tasks (threads count) of the program and its descendants; enforced only
                                    // for a uid other than 0 (the kernel exempts root, in a user namespace too); without a
                                    // user namespace it counts every process of the uid; 0 = none
  std::uint64_t file_bytes = 0;     // RLIMIT_FSIZE; 0 = none
  double cpu_s = 0;                 // RLIMIT_CPU (soft, rounded up to whole seconds; hard = soft + 5 s); 0 = none
  std::uint64_t scratch_bytes = 0;  // size of the tmpfs mounted on `scratch` when a mount namespace is available; 0 = no tmpfs
};

struct policy {
  std::vector<std::filesystem::path> read_paths;   // read (+ execute) beneath a directory, or that one file
  std::vector<std::filesystem::path> write_paths;  // every right beneath (e.g. a compiler's output dir)
  std::vector<std::filesystem::path> device_paths; // read, write, ioctl: /dev/null, /dev/nvidia*, ...
  std::filesystem::path scratch;                   // private read-write dir; cwd, HOME and TMPDIR point here
  std::map<std::string, std::string> env;          // the program's whole environment: nothing is inherited
                                                   // (HOME and TMPDIR default to scratch when not given)
  limits lim;
  syscall_profile profile = syscall_profile::worker;
  bool proc_self_write = true;                     // CUDA writes beneath /proc/self (thread names, seen on the H200)
  std::vector<std::string> require;                // layers that must be in force, else the program is not run (exit 125)
  std::vector<std::string> skip;                   // layers not to apply (tests, debugging); reported as skipped
};

/// The layer names a report carries, in order (report.hpp).
inline const std::vector<std::string>& layer_names() {
  static const std::vector<std::string> names{
      "user_namespace", "pid_namespace",  "network_namespace", "mount_namespace",
      "landlock_filesystem", "landlock_network", "landlock_scope", "seccomp",
      "no_new_privs",   "limits",         "environment"};
  return names;
}

[[nodiscard]] std::string to_string(syscall_profile p);
/// @throws kforge::error (usage) for a name other than worker, compiler, tool.
[[nodiscard]] syscall_profile profile_from_string(const std::string& s);

[[nodiscard]] nlohmann::json to_json(const policy& p);
/// @throws kforge::error (usage) on a malformed policy: an unknown key (a typo must not
/// weaken a policy silently), a wrong type, a relative path, a negative limit, an unknown
/// layer name in require/skip.
[[nodiscard]] policy policy_from_json(const nlohmann::json& j);

/// Where programs, their shared libraries and the loader's configuration live on a Debian
/// or RHEL-like system: /usr, /lib*, /bin, /sbin, /etc/ld.so.*, /etc/alternatives, ... .
/// Not /etc as a whole (it holds /etc/shadow and keys) nor /home, /root, /tmp.
[[nodiscard]] std::vector<std::filesystem::path> system_read_paths();
/// The folders of $LD_LIBRARY_PATH (empty entries skipped): shared libraries the loader of a
/// confined program may be pointed at outside the system's folders (the GPU machine's libnvrtc,
/// a CUDA toolkit in /opt).
[[nodiscard]] std::vector<std::filesystem::path> library_path_dirs();
/// /dev/null, /dev/zero, /dev/full, /dev/random, /dev/urandom, and the NVIDIA device nodes
/// present on this machine (/dev/nvidiactl, /dev/nvidia0.., /dev/nvidia-uvm(-tools),
/// /dev/nvidia-caps): what a worker needs.
[[nodiscard]] std::vector<std::filesystem::path> default_device_paths();

} // namespace kforge::sandbox
