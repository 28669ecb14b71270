#pragma once
// Which stream a candidate's kernels run on (docs/verification.md, "side_stream"): CUPTI's
// callbacks on the driver's launch calls (cuLaunchKernel and its Ex, cooperative and
// per-thread forms, cuGraphLaunch) see every kernel this process starts, however quickly it
// finishes. A launch on any stream but the call's (args->stream), made by the thread in
// kf_forward while it runs or by any other thread at any time, is recorded, and so is a launch
// on args->stream by another thread while no call runs (work that outlives the call, untimed);
// kforge's own launches from the calling thread outside the call are not. In the candidate's process, so it
// binds an honest kernel and a careless cheat, not one that unsubscribes CUPTI itself.
// libcupti is loaded at run time: where it is missing, or another subscriber holds it (under
// compute-sanitizer or ncu), start() says why and nothing is watched.
//   std::string why;  auto g = launch_guard::start(dev.stream(), &why);
//   g->begin_call();  kf_forward(&args);  g->end_call();
//   if (auto v = g->take_violation()) report(v->check, v->message);
#include <memory>
#include <optional>
#include <string>

namespace kforge::worker {

class launch_guard {
public:
  /// @return nullptr with *why_not set when CUPTI cannot watch this process
  [[nodiscard]] static std::unique_ptr<launch_guard> start(void* call_stream, std::string* why_not);
  ~launch_guard();
  launch_guard(const launch_guard&) = delete;
  launch_guard& operator=(const launch_guard&) = delete;

  /// The calling thread is in kf_forward from begin to end: its launches are the candidate's.
  void begin_call();
  void end_call();
  struct violation {
    std::string check;   // "side_stream" (another stream), "deferred_work" (args->stream, between calls)
    std::string message; // one line
  };
  /// The first such launch since the last take; nothing if none.
  [[nodiscard]] std::optional<violation> take_violation();

private:
  launch_guard() = default;
  void* m_subscriber = nullptr;
};

} // namespace kforge::worker
