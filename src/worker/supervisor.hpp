#pragma once
// The parent side of a worker: start kforge-worker in its own process group, hand it a
// job, read its result channel under a watchdog, and classify how it ended. Nothing the
// worker does (crash, hang, exit(0), junk on stdout, forged frames, a forked child that
// keeps the pipes open) can stop the parent or read as success.
//   auto out = run_worker(exe, job, 60.0);
//   if (out.end == worker_end::done) for (auto& m : out.messages) ...
#include "worker/protocol.hpp"

#include <filesystem>
#include <functional>
#include <string>
#include <vector>

namespace kforge::worker {

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
};

/// The kforge-worker executable: $KFORGE_WORKER, else beside the running executable.
[[nodiscard]] std::filesystem::path default_worker_exe();

/// A worker may run for this many times its timeout_s in all (see run_worker).
inline constexpr int total_cap_factor = 20;

/// @pre job has no "nonce" (run_worker adds it)
/// `timeout_s` bounds each step: the worker is killed when no frame has arrived for that
/// long (it reports before every candidate call), or after total_cap_factor * timeout_s.
/// `wrapper` is a command put in front of the worker, which it must start with the same
/// stdin and descriptors: `{"compute-sanitizer", "--tool", "memcheck"}` runs
/// `compute-sanitizer --tool memcheck kforge-worker`. Empty: the worker itself.
/// `sink`, when given, sees each frame as it arrives (before it is kept in `messages`) and
/// may move its payload out: outputs of gigabytes are judged and dropped one by one instead
/// of all held until the worker ends. Time spent in it is not the worker's. What it throws
/// is rethrown by run_worker after the worker's process group is killed.
using message_sink = std::function<void(message&)>;
[[nodiscard]] worker_outcome run_worker(const std::filesystem::path& exe, nlohmann::json job, double timeout_s,
                                        std::size_t max_output = 64 * 1024,
                                        const std::vector<std::string>& wrapper = {}, const message_sink& sink = {});

} // namespace kforge::worker
