#pragma once
// Shared by the test executables: temporary folders, files, and the built binaries.
#include "core/fs.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <filesystem>
#include <cstdlib>
#include <optional>
#include <random>
#include <string>
#include <utility>

namespace kforge::test {

/// A fresh folder under the system temp dir, removed when the object dies.
struct temp_dir {
  std::filesystem::path path;
  temp_dir() {
    path = std::filesystem::temp_directory_path() /
           ("kforge-test-" + std::to_string(std::random_device{}()) + std::to_string(std::random_device{}()));
    std::filesystem::create_directories(path);
  }
  ~temp_dir() {
    std::error_code ec;
    std::filesystem::remove_all(path, ec);
  }
  [[nodiscard]] std::filesystem::path operator/(const std::string& s) const { return path / s; }
};

/// Sets an environment variable for this object's life, then puts back what was there
/// (the old value, or no variable).
struct scoped_env {
  std::string name;
  std::optional<std::string> old;
  scoped_env(std::string n, const std::string& value) : name(std::move(n)) {
    if (const char* v = std::getenv(name.c_str())) old = v;
    ::setenv(name.c_str(), value.c_str(), 1);
  }
  ~scoped_env() {
    if (old) ::setenv(name.c_str(), old->c_str(), 1);
    else ::unsetenv(name.c_str());
  }
  scoped_env(const scoped_env&) = delete;
  scoped_env& operator=(const scoped_env&) = delete;
};

/// Points KFORGE_CACHE at a fresh folder for this object's life, so "cached" in a test
/// means that test's own earlier build.
struct cache_env {
  temp_dir dir;
  scoped_env env{"KFORGE_CACHE", dir.path.string()};
};

inline void write(const std::filesystem::path& p, const std::string& text) { write_file_atomic(p, text); }

// Where the tree and binaries are: the paths of the build, unless the environment moves
// them (the GPU machine runs a copy of the tree at another path).
inline std::filesystem::path env_path(const char* var, const char* built) {
  const char* v = std::getenv(var);
  return v && *v ? std::filesystem::path(v) : std::filesystem::path(built);
}
inline std::filesystem::path source_dir() { return env_path("KFORGE_SOURCE_DIR", KFORGE_SOURCE_DIR); }
/// A file under tests/ (KFORGE_TEST_DIR), whole. @throws kforge::error when it cannot be read.
inline std::string read_test_file(const std::string& relative) {
  return read_file(std::filesystem::path(KFORGE_TEST_DIR) / relative);
}
inline std::filesystem::path problems_dir() { return source_dir() / "problems" / "cpu"; }
inline std::filesystem::path worker_binary() { return env_path("KFORGE_WORKER", KFORGE_WORKER_BINARY); }
inline std::filesystem::path kforge_binary() { return env_path("KFORGE_BINARY", KFORGE_BINARY); }

/// A loopback TCP port nothing listens on (bound to a free port, then closed): a server
/// that is down. -1 when no socket could be bound.
inline int closed_loopback_port() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return -1;
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t n = sizeof a;
  const bool bound = ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0 &&
                     ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &n) == 0;
  ::close(fd);
  return bound ? ntohs(a.sin_port) : -1;
}

} // namespace kforge::test
