#include "worker/command_input.hpp"

#include <poll.h>
#include <sched.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <string>

namespace kforge::worker {

namespace {

void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  asm volatile("yield");
#endif
}

} // namespace

command_input::int_type command_input::underflow() {
  if (gptr() < egptr()) return traits_type::to_int_type(*gptr());
  if (m_spin.count() > 0) {
    const auto until = std::chrono::steady_clock::now() + m_spin;
    pollfd pf{m_fd, POLLIN, 0};
    // A pause between polls: a poll is a system call, and ~0.5 us of pauses keeps the loop's
    // own traffic small while the answer comes within a microsecond of the command.
    while (::poll(&pf, 1, 0) == 0 && std::chrono::steady_clock::now() < until)
      for (int i = 0; i < 32; ++i) cpu_relax();
  }
  ssize_t n = 0;
  do n = ::read(m_fd, m_buf.data(), m_buf.size());
  while (n < 0 && errno == EINTR);
  if (n <= 0) return traits_type::eof();
  setg(m_buf.data(), m_buf.data(), m_buf.data() + n);
  return traits_type::to_int_type(*gptr());
}

std::chrono::microseconds default_host_spin() {
  if (const char* v = std::getenv("KFORGE_HOST_SPIN_US"); v && *v) {
    char* end = nullptr;
    const long long us = std::strtoll(v, &end, 10);
    if (end && *end == '\0' && us >= 0) return std::chrono::microseconds(us);
  }
  cpu_set_t set;
  CPU_ZERO(&set);
  if (::sched_getaffinity(0, sizeof set, &set) != 0 || CPU_COUNT(&set) < 4) return std::chrono::microseconds(0);
  return std::chrono::milliseconds(20);
}

std::optional<std::pair<int, int>> timing_cpus() {
  const char* v = std::getenv("KFORGE_TIMING_CPUS");
  if (!v || !*v) return std::nullopt;
  int a = -1, b = -1;
  char sep = 0, tail = 0;
  if (std::sscanf(v, "%d%c%d%c", &a, &sep, &b, &tail) != 3 || sep != ',' || a == b) return std::nullopt;
  cpu_set_t set;
  CPU_ZERO(&set);
  if (::sched_getaffinity(0, sizeof set, &set) != 0 || a < 0 || b < 0 || a >= CPU_SETSIZE || b >= CPU_SETSIZE ||
      !CPU_ISSET(a, &set) || !CPU_ISSET(b, &set))
    return std::nullopt;
  return std::pair{a, b};
}

} // namespace kforge::worker
