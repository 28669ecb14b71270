#pragma once
// The worker's result channel: a pipe on a dedicated descriptor (not stdout, which the
// candidate may print to), carrying frames
//     "KFW1" | nonce (16 bytes) | u32 header length | JSON header | u64 payload length | payload
// The nonce is chosen by the parent per worker and travels in the job on stdin; a frame
// without it, or any byte that is not a frame, is a protocol error, and only a final
// {"type":"done"} frame ends a worker cleanly: exit(0) from a candidate, a forged
// "PASS" on stdout or a half-written frame never reads as success.
#include <nlohmann/json.hpp>

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace kforge::worker {

inline constexpr int result_fd = 3; // where the worker finds the channel
/// Where a worker of a GPU-resident evaluation finds its descriptor socket (core/fd_passing.hpp):
/// the judge sends its shared sets' fds on it, a candidate's worker receives them.
inline constexpr int share_fd = 5;
using nonce = std::array<std::uint8_t, 16>;

struct message {
  nlohmann::json header;             // always has "type"
  std::vector<std::uint8_t> payload; // raw tensor bytes, when the header says so
};

[[nodiscard]] nonce make_nonce();
[[nodiscard]] std::string nonce_hex(const nonce& n);
[[nodiscard]] std::optional<nonce> nonce_from_hex(const std::string& s);

/// Writer side (the worker). Writes whole frames; @throws kforge::error if the pipe is gone.
class channel_writer {
public:
  channel_writer(int fd, nonce n) : m_fd(fd), m_nonce(n) {}
  void send(const nlohmann::json& header, const void* payload = nullptr, std::size_t bytes = 0);

private:
  int m_fd;
  nonce m_nonce;
};

/// Reader side (the parent): feed bytes as they arrive, take complete messages out.
class channel_reader {
public:
  explicit channel_reader(nonce n) : m_nonce(n) {}
  void feed(const char* data, std::size_t n);
  /// @return the next complete message, if any. Sets error() on a malformed or forged frame.
  [[nodiscard]] std::optional<message> next();
  [[nodiscard]] const std::string& error() const { return m_error; }
  [[nodiscard]] bool partial() const { return !m_buf.empty(); } // bytes of an unfinished frame

private:
  nonce m_nonce;
  std::vector<char> m_buf;
  std::string m_error;
};

} // namespace kforge::worker
