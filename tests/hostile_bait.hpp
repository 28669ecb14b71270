#pragma once
// What the hostile-candidate suites (tests/adversarial/hostile.cpp, tests/gpu/hostile.cpp) lay
// out for the candidates to attack, and how they look for damage afterwards. The kernels aim at
// fixed paths under /tmp/kforge-hostile (a candidate is given no path of the test's).
#include "core/fs.hpp"
#include "core/hash.hpp"
#include "test_util.hpp"

#include <sys/socket.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <string>

namespace kforge::test {

inline const std::filesystem::path hostile_bait = "/tmp/kforge-hostile";
inline constexpr const char* hostile_build_secret = "kforge_build_secret_5c1e is the answer key\n";

/// Lays the files the kernels aim at. Several tests may run at once: each file is written whole
/// (atomically) and never removed, so one test's set-up cannot pull another's out from under it.
inline void lay_hostile_bait() {
  namespace fs = std::filesystem;
  fs::create_directories(hostile_bait);
  write(hostile_bait / "secret.txt", "the truth is 42\n");
  write(hostile_bait / "build-secret.txt", hostile_build_secret);
  if (!fs::exists(hostile_bait / "problem" / "problem.toml")) {
    const auto tmp = hostile_bait / ("problem." + std::to_string(::getpid()));
    fs::copy(problems_dir() / "softmax", tmp, fs::copy_options::recursive | fs::copy_options::overwrite_existing);
    std::error_code ec;
    fs::rename(tmp, hostile_bait / "problem", ec); // lost the race: another test's copy is the same
    fs::remove_all(tmp, ec);
  }
}

/// sha256 of every file under `root`, by path.
inline std::map<std::string, std::string> hashes_under(const std::filesystem::path& root) {
  std::map<std::string, std::string> h;
  for (auto& e : std::filesystem::recursive_directory_iterator(root))
    if (e.is_regular_file()) h[e.path().string()] = sha256_hex(read_file(e.path()));
  return h;
}

/// Whether any process on the machine has this name (/proc/PID/comm).
inline bool process_named(const std::string& comm) {
  for (auto& e : std::filesystem::directory_iterator("/proc")) {
    std::ifstream in(e.path() / "comm");
    std::string name;
    if (in && std::getline(in, name) && name == comm) return true;
  }
  return false;
}

/// A bound socket that accepts nothing on its own: after the evaluation, anything queued on it
/// came from the candidate. fd < 0 when the address could not be bound.
struct listener {
  int fd = -1;
  listener(int domain, int type, const sockaddr* addr, socklen_t len) {
    fd = ::socket(domain, type | SOCK_NONBLOCK, 0);
    int one = 1;
    ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (fd >= 0 && ::bind(fd, addr, len) != 0) {
      ::close(fd);
      fd = -1;
    }
    if (fd >= 0 && type == SOCK_STREAM) ::listen(fd, 8);
  }
  listener(const listener&) = delete;
  listener& operator=(const listener&) = delete;
  ~listener() {
    if (fd >= 0) ::close(fd);
  }
  [[nodiscard]] bool heard_anything() const {
    if (fd < 0) return false;
    char buf[16];
    if (::recv(fd, buf, sizeof buf, MSG_DONTWAIT) > 0) return true; // a datagram
    const int c = ::accept(fd, nullptr, nullptr);                   // a connection
    if (c >= 0) ::close(c);
    return c >= 0;
  }
};

} // namespace kforge::test
