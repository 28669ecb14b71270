#pragma once
// File descriptors sent between processes over a Unix socket (SCM_RIGHTS), one message with
// a short text label and up to 64 descriptors. What carries the GPU buffers an evaluation's
// trusted judge shares with a candidate's worker (device/share.hpp): an fd is a capability,
// it cannot be guessed and works between processes in different namespaces.
//   int sv[2]; make_fd_socket(sv);  send_fds(sv[0], "buffers", {fd1, fd2});
//   auto m = recv_fds(sv[1]);       // m.label == "buffers", m.fds owned by the caller
#include <string>
#include <vector>

namespace kforge {

/// A connected pair of SOCK_SEQPACKET Unix sockets (message boundaries kept), close-on-exec.
/// @throws kforge::error (internal) when the system refuses
void make_fd_socket(int sv[2]);

/// Sends `label` (at most 4096 bytes) with the descriptors; they stay open in the sender.
/// @throws kforge::error (worker) when the peer is gone
void send_fds(int sock, const std::string& label, const std::vector<int>& fds);

struct received_fds {
  std::string label;
  std::vector<int> fds; // the receiver's own copies, close-on-exec; the caller closes them
};
/// Waits for one message. @throws kforge::error (worker) on end of stream or a malformed message
[[nodiscard]] received_fds recv_fds(int sock);

} // namespace kforge
