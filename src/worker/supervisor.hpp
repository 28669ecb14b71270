#pragma once
// The parent side of a worker: start kforge-worker in its own process group, hand it a
// job, read its result channel under a watchdog, and classify how it ended. Nothing the
// worker does (crash, hang, exit(0), junk on stdout, forged frames, a forked child that
// keeps the pipes open) can stop the parent or read as success.
//   auto out = run_worker(exe, job, 60.0);                  // a whole run: job in, outcome out
//   if (out.end == worker_end::done) for (auto& m : out.messages) ...
// A worker the parent talks to while it runs (the timing workers) is a session:
//   worker_session s(exe, job, {.timeout_s = 60});          // the job is the first line on its stdin
//   s.wait_for("ready");  s.send({{"cmd", "sample"}, ...});  auto m = s.wait_for("sample");
//   auto out = s.finish();                                  // stdin closed, read to the end, classified
// Protocol: the job is the first line on the worker's stdin (JSON has no raw newlines);
// each further line is a command; the worker answers on the result channel (protocol.hpp).
// Every start asks confinement.hpp's confine_worker how to run the worker confined, and
// runs its argv prefix, then the wrapper, then the worker; a confined worker's launcher
// reports the layers in force on descriptor 4 (worker_outcome::confinement).
#include "worker/confinement.hpp"
#include "worker/protocol.hpp"

#include <sys/types.h>

#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace kforge::worker {

/// Where a confined worker's launcher writes its report: one JSON line (then closes it).
inline constexpr int report_fd = 4;

enum class worker_end {
  done,           // sent its final frame
  crashed,        // killed by a signal it raised (segfault, abort, ...)
  timeout,        // the watchdog killed it
  exited_early,   // exited without the final frame (exit(0) in a candidate, a fatal error)
  protocol_error, // bytes on the channel that are not this worker's frames
};

[[nodiscard]] const char* worker_end_name(worker_end e);

struct worker_outcome {
  worker_end end = worker_end::done;
  int exit_code = 0;
  int signal = 0;
  std::string detail;            // one line: how it ended ("SIGSEGV (signal 11)", "exit code 0", ...)
  std::vector<message> messages; // every frame received, in order (the final "done" included)
  std::string output;            // what the worker printed on stdout/stderr, truncated
  nlohmann::json last_progress;  // the last "progress" frame: where it was when it ended
  double wall_s = 0;
  /// The first line of the confinement report (report_fd), as JSON: the layers in force.
  /// {"unconfined": why} when confinement was turned off (launch::unconfined_reason); null
  /// when the worker was started unconfined otherwise, or its launcher reported nothing.
  nlohmann::json confinement;
  /// Why the sandbox itself ended the worker, from a later report line of its init (a limit
  /// the kernel does not enforce there: processes and threads for uid 0); empty otherwise.
  std::string sandbox_ended;
};

/// The kforge-worker executable: $KFORGE_WORKER, else beside the running executable.
[[nodiscard]] std::filesystem::path default_worker_exe();

/// A worker may run for this many times its timeout_s in all (see worker_options).
inline constexpr int total_cap_factor = 20;

/// Sees each frame as it arrives (before it is kept in `messages`) and may move its payload
/// out: outputs of gigabytes are judged and dropped one by one instead of all held until the
/// worker ends. Time spent in it is not the worker's. What it throws is rethrown once the
/// worker's process group is killed.
using message_sink = std::function<void(message&)>;

struct worker_options {
  /// Bounds each step: the worker is killed when no frame has arrived for this long while
  /// the parent waits on it (it reports before every candidate call; a command starts a new
  /// step), or after total_cap_factor * timeout_s in all.
  double timeout_s = 60;
  std::size_t max_output = 64 * 1024; // of stdout/stderr kept
  /// A command put in front of the worker, which it must start with the same stdin and
  /// descriptors: `{"compute-sanitizer", "--tool", "memcheck"}` runs
  /// `compute-sanitizer --tool memcheck kforge-worker`. Empty: the worker itself.
  std::vector<std::string> wrapper;
  message_sink sink;
  /// What confine_worker is asked with: the problem (may be null) and the role the worker
  /// is started as ("sanitize" for a verify job under compute-sanitizer); empty: the job's
  /// "role". The libraries are the job's: "libraries" and each of "subjects".
  const problem::problem* problem = nullptr;
  std::string role;
  /// Folders the worker may write besides its scratch (a sanitizer's log, a profiler's
  /// report). The wrapper's program, when there is one, is confine_worker's `tool`.
  std::vector<std::filesystem::path> writable;
  /// The launch to use instead of asking confine_worker (tests of this plumbing); unset in
  /// every real start.
  std::optional<launch> confined;
  /// A socket the worker finds on share_fd (protocol.hpp): how descriptors reach it
  /// (core/fd_passing.hpp). -1: none. The session keeps no copy; the caller still owns it.
  int share_socket = -1;
};

/// A running worker the parent talks to. Not copyable; the destructor kills what is left
/// of its process group.
class worker_session {
public:
  /// Starts the worker and writes `job` (plus a "nonce") as the first line on its stdin.
  /// @pre job has no "nonce"
  /// @throws kforge::error (worker) when the executable is missing or cannot be started
  worker_session(const std::filesystem::path& exe, nlohmann::json job, worker_options opts);
  ~worker_session();
  worker_session(const worker_session&) = delete;
  worker_session& operator=(const worker_session&) = delete;

  /// One command line on the worker's stdin; starts a new watchdog step.
  /// @return false when the worker no longer reads its stdin (it ended)
  bool send(const nlohmann::json& command);
  /// No more commands: the worker sees end of file on its stdin.
  void close_input();
  /// Stops (SIGSTOP) or continues (SIGCONT) the worker's whole process group: while stopped,
  /// nothing of it runs on the CPU (work it queued on a GPU still does). The watchdog does not
  /// count time the parent spends elsewhere; a stopped worker is continued by finish().
  void stop();
  void resume();
  /// The worker's time starts now: a new step, and the total cap counted from here. For a
  /// worker started before its job was complete (early_workers.hpp): its wait is not its own.
  void restart_watchdog();
  /// Reads frames (each to the sink, then kept) until one of `type` arrives.
  /// @return its header; nothing when the worker ended, broke the protocol or was killed by
  /// the watchdog first (finish() says which).
  [[nodiscard]] std::optional<nlohmann::json> wait_for(const std::string& type);
  /// The confinement report its launcher wrote so far (the layers in force are reported at
  /// start): what finish() would say of them, for a worker that lives on.
  [[nodiscard]] nlohmann::json confinement() const;
  /// Closes stdin, reads until the worker ends (under the watchdog), kills whatever is left
  /// of its process group and classifies how it ended. Call once.
  [[nodiscard]] worker_outcome finish();

private:
  struct state;
  std::unique_ptr<state> m;
};

/// A whole non-interactive run: the job, then end of file on stdin; the outcome.
[[nodiscard]] worker_outcome run_worker(const std::filesystem::path& exe, nlohmann::json job,
                                        const worker_options& opts);
/// The same, options in order.
[[nodiscard]] worker_outcome run_worker(const std::filesystem::path& exe, nlohmann::json job, double timeout_s,
                                        std::size_t max_output = 64 * 1024,
                                        const std::vector<std::string>& wrapper = {}, const message_sink& sink = {});

} // namespace kforge::worker
