#include "core/fd_passing.hpp"

#include "core/error.hpp"

#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace kforge {
namespace {
constexpr std::size_t max_fds = 64, max_label = 4096;
}

void make_fd_socket(int sv[2]) {
  if (::socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) != 0)
    KFORGE_THROW(internal, "socketpair: {}", std::strerror(errno));
}

void send_fds(int sock, const std::string& label, const std::vector<int>& fds) {
  if (fds.size() > max_fds || label.size() > max_label || label.empty())
    KFORGE_THROW(internal, "send_fds: {} descriptors, label of {} bytes", fds.size(), label.size());
  iovec io{const_cast<char*>(label.data()), label.size()};
  msghdr msg{};
  msg.msg_iov = &io;
  msg.msg_iovlen = 1;
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int) * max_fds)] = {};
  if (!fds.empty()) {
    msg.msg_control = control;
    msg.msg_controllen = CMSG_SPACE(sizeof(int) * fds.size());
    cmsghdr* c = CMSG_FIRSTHDR(&msg);
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_RIGHTS;
    c->cmsg_len = CMSG_LEN(sizeof(int) * fds.size());
    std::memcpy(CMSG_DATA(c), fds.data(), sizeof(int) * fds.size());
  }
  ssize_t n;
  do n = ::sendmsg(sock, &msg, MSG_NOSIGNAL);
  while (n < 0 && errno == EINTR);
  if (n != static_cast<ssize_t>(label.size())) KFORGE_THROW(worker, "sending descriptors: {}", std::strerror(errno));
}

received_fds recv_fds(int sock) {
  std::string buf(max_label, '\0');
  iovec io{buf.data(), buf.size()};
  msghdr msg{};
  msg.msg_iov = &io;
  msg.msg_iovlen = 1;
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int) * max_fds)] = {};
  msg.msg_control = control;
  msg.msg_controllen = sizeof control;
  ssize_t n;
  do n = ::recvmsg(sock, &msg, MSG_CMSG_CLOEXEC);
  while (n < 0 && errno == EINTR);
  if (n <= 0) KFORGE_THROW(worker, "receiving descriptors: {}", n == 0 ? "the peer closed its socket" : std::strerror(errno));
  received_fds out;
  for (cmsghdr* c = CMSG_FIRSTHDR(&msg); c; c = CMSG_NXTHDR(&msg, c))
    if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS) {
      const std::size_t k = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
      const std::size_t at = out.fds.size();
      out.fds.resize(at + k);
      std::memcpy(out.fds.data() + at, CMSG_DATA(c), k * sizeof(int));
    }
  if (msg.msg_flags & (MSG_TRUNC | MSG_CTRUNC)) {
    for (int fd : out.fds) ::close(fd);
    KFORGE_THROW(worker, "receiving descriptors: the message was truncated");
  }
  out.label.assign(buf.data(), static_cast<std::size_t>(n));
  return out;
}

} // namespace kforge
