#pragma once
// Keeps every device busy while builds run on the CPU cores. Each submitted job is an
// evaluation: it compiles on a pool thread (builds of many jobs overlap, one per core)
// and then asks for a device lane (worker::evaluate_options::acquire_device); a lane is
// held by one evaluation at a time, from its first worker to its last, so a timing never
// runs beside another timing or verification on the same device.
//   search::scheduler s({.devices = 2});
//   auto f = s.submit([&](const search::acquire_fn& acquire) {
//     worker::evaluate_options o;  o.acquire_device = acquire;  return worker::evaluate(p, src, o);
//   });
// With the CPU backend, `devices` simulates that many lanes on one machine (tests).
#include "worker/evaluate.hpp"

#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <future>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

namespace kforge::search {

using acquire_fn = std::function<worker::device_lease()>;

struct scheduler_options {
  int devices = 1;    // lanes, one per GPU (ordinals 0..devices-1)
  int build_jobs = 0; // jobs that may be building while every lane is busy; 0: the CPU count
};

/// One lane's occupation, for reports and for the tests that check lanes never overlap.
struct lane_interval {
  int lane = 0;
  std::chrono::steady_clock::time_point begin, end;
};

class scheduler {
public:
  explicit scheduler(scheduler_options opts);
  /// Waits for every submitted job.
  ~scheduler();
  scheduler(const scheduler&) = delete;
  scheduler& operator=(const scheduler&) = delete;

  template <class F>
  auto submit(F&& job) -> std::future<decltype(job(std::declval<const acquire_fn&>()))> {
    using R = decltype(job(std::declval<const acquire_fn&>()));
    auto task = std::make_shared<std::packaged_task<R()>>(
        [this, j = std::forward<F>(job)]() mutable { return j(m_acquire); });
    auto fut = task->get_future();
    enqueue([task] { (*task)(); });
    return fut;
  }

  [[nodiscard]] int devices() const { return m_opts.devices; }
  [[nodiscard]] int threads() const { return static_cast<int>(m_threads.size()); }
  /// Every lane occupation so far, in the order they ended.
  [[nodiscard]] std::vector<lane_interval> intervals() const;
  /// Lane acquisitions per lane.
  [[nodiscard]] std::vector<int> lane_uses() const;

private:
  void enqueue(std::function<void()> fn);
  worker::device_lease acquire();
  void release(int lane, std::chrono::steady_clock::time_point begin);

  scheduler_options m_opts;
  acquire_fn m_acquire;
  mutable std::mutex m_mu;
  std::condition_variable m_work_cv, m_lane_cv;
  std::deque<std::function<void()>> m_queue;
  std::vector<bool> m_lane_busy;
  std::vector<int> m_lane_uses;
  std::vector<lane_interval> m_intervals;
  bool m_stop = false;
  std::vector<std::thread> m_threads;
};

} // namespace kforge::search
