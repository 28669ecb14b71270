#pragma once
// A long-lived helper process the bridge keeps between calls, so that Python's start and
// `import torch` (seconds) are paid once per kforge process instead of once per call.
// Requests are lines on its stdin; each answer is one line on its descriptor 3; what it
// prints (the model's prints, tracebacks) goes to a pipe whose tail is kept for messages.
// A helper that times out or dies is killed with its process group and never reused.
// Descriptor 4 is a Unix socket on which send_fd() hands it file descriptors (the GPU
// memory an evaluation's judge shares with it: device/share.hpp).
//   helper_process h({"python3", "kforge_torch.py", "serve"});
//   auto line = h.exchange("{...}\n", 120);   // nullopt: timed out or died (see h.ended())
#include <optional>
#include <string>
#include <sys/types.h>
#include <vector>

namespace kforge::bridge {

class helper_process {
public:
  /// @throws kforge::error (internal) when the process cannot be started.
  explicit helper_process(const std::vector<std::string>& argv);
  ~helper_process();
  helper_process(const helper_process&) = delete;
  helper_process& operator=(const helper_process&) = delete;

  /// Writes `request` (one line, newline included) and waits for one answer line.
  /// @return the line without its newline; nullopt when the process timed out (it is then
  ///         killed) or ended first.
  [[nodiscard]] std::optional<std::string> exchange(const std::string& request, double timeout_s);
  /// Sends `fd` (it stays open here) on the helper's descriptor 4, labelled.
  /// @throws kforge::error (worker) when the helper is gone
  void send_fd(const std::string& label, int fd);
  [[nodiscard]] bool alive() const { return m_pid > 0 && m_ended.empty(); }
  /// How it ended ("timed out after 30 s", "exit code 1", "signal 9"); empty while alive.
  [[nodiscard]] const std::string& ended() const { return m_ended; }
  /// The last bytes it printed (since clear_output()).
  [[nodiscard]] const std::string& output_tail() const { return m_output; }
  void clear_output() { m_output.clear(); }

private:
  void kill_and_reap(const std::string& why);
  void drain_output();
  pid_t m_pid = -1;
  int m_in = -1, m_answer = -1, m_out = -1, m_fds = -1;
  std::string m_pending; // answer bytes past the last newline
  std::string m_output;
  std::string m_ended;
};

} // namespace kforge::bridge
