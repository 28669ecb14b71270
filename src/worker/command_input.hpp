#pragma once
// A worker's stdin: the job line, then the parent's commands, one JSON line each, read from
// fd 0 through a buffer of this module's own (not stdio's, whose read-ahead poll cannot see).
//
// Why it spins: a timing worker waits for its next sample while the other worker takes its
// own. If it sleeps in read(), its core can drop into a deep idle state, which costs the
// core's clock and private caches; the next timed call's host side (its launch is inside the
// interval by kforge's protocol) then runs cold. Measured outside kforge on an H100 host, a
// load_inline call with a 15 us kernel holds 39.5 us of CUDA-event interval with the host hot
// and 90.7 us after 1 ms of sleep (bench/RESULTS.md, 2026-12-07 ~15:03). So a timing worker
// polls for up to `spin` before it sleeps; both timing workers wait alike, so the reference
// and the candidate are timed from the same host state. A real model's launching thread is
// busy, not asleep, between kernels: a hot host is the case users run.
#include <array>
#include <chrono>
#include <optional>
#include <utility>
#include <streambuf>

namespace kforge::worker {

class command_input : public std::streambuf {
public:
  explicit command_input(int fd) : m_fd(fd) {}
  /// From now on, wait for input by polling for up to `spin` before a blocking read (0: never poll).
  void set_spin(std::chrono::microseconds spin) { m_spin = spin; }

protected:
  int_type underflow() override;

private:
  int m_fd;
  std::chrono::microseconds m_spin{0};
  std::array<char, 4096> m_buf{};
};

/// How long the timing workers poll for their next command: KFORGE_HOST_SPIN_US when set (0 turns
/// it off), else 0 on a machine where fewer than 4 CPUs are this process's (a polling worker would
/// take a core that the parent and the other worker need), else 20 ms, longer than the samples of
/// most kernels.
[[nodiscard]] std::chrono::microseconds default_host_spin();

/// The CPUs the candidate's and the trusted timing worker pin their timing thread to:
/// KFORGE_TIMING_CPUS="A,B" (two different CPUs this process may use), else none (not pinned).
/// An experiment: whether a launching thread that keeps its core's caches to itself narrows
/// the Python call's spread (bench/python_candidates.sh overhead).
[[nodiscard]] std::optional<std::pair<int, int>> timing_cpus();

} // namespace kforge::worker
