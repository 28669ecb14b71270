#include "search/scheduler.hpp"

#include <algorithm>

namespace kforge::search {

scheduler::scheduler(scheduler_options opts) : m_opts(opts) {
  m_opts.devices = std::max(1, m_opts.devices);
  if (m_opts.build_jobs <= 0) m_opts.build_jobs = std::max(1u, std::thread::hardware_concurrency());
  m_lane_busy.assign(static_cast<std::size_t>(m_opts.devices), false);
  m_lane_uses.assign(static_cast<std::size_t>(m_opts.devices), 0);
  m_acquire = [this] { return acquire(); };
  // Threads: one per lane (the jobs holding devices) plus build_jobs (the jobs compiling
  // meanwhile), so a device never waits for a build that could have started earlier.
  const int n = m_opts.devices + m_opts.build_jobs;
  for (int i = 0; i < n; ++i)
    m_threads.emplace_back([this] {
      for (;;) {
        std::function<void()> fn;
        {
          std::unique_lock lock(m_mu);
          m_work_cv.wait(lock, [&] { return m_stop || !m_queue.empty(); });
          if (m_queue.empty()) return; // stopping and drained
          fn = std::move(m_queue.front());
          m_queue.pop_front();
        }
        fn(); // a packaged_task: exceptions land in its future
      }
    });
}

scheduler::~scheduler() {
  {
    std::lock_guard lock(m_mu);
    m_stop = true;
  }
  m_work_cv.notify_all();
  for (auto& t : m_threads) t.join();
}

void scheduler::enqueue(std::function<void()> fn) {
  {
    std::lock_guard lock(m_mu);
    m_queue.push_back(std::move(fn));
  }
  m_work_cv.notify_one();
}

worker::device_lease scheduler::acquire() {
  std::unique_lock lock(m_mu);
  int lane = -1;
  m_lane_cv.wait(lock, [&] {
    auto it = std::find(m_lane_busy.begin(), m_lane_busy.end(), false);
    if (it == m_lane_busy.end()) return false;
    lane = static_cast<int>(it - m_lane_busy.begin());
    return true;
  });
  m_lane_busy[static_cast<std::size_t>(lane)] = true;
  ++m_lane_uses[static_cast<std::size_t>(lane)];
  const auto begin = std::chrono::steady_clock::now();
  // The lease's deleter frees the lane: the evaluation holds it exactly as long as it
  // keeps the lease, exceptions included.
  std::shared_ptr<void> hold(nullptr, [this, lane, begin](void*) { release(lane, begin); });
  return {.ordinal = lane, .hold = std::move(hold)};
}

void scheduler::release(int lane, std::chrono::steady_clock::time_point begin) {
  {
    std::lock_guard lock(m_mu);
    m_lane_busy[static_cast<std::size_t>(lane)] = false;
    m_intervals.push_back({lane, begin, std::chrono::steady_clock::now()});
  }
  m_lane_cv.notify_all();
}

std::vector<lane_interval> scheduler::intervals() const {
  std::lock_guard lock(m_mu);
  return m_intervals;
}

std::vector<int> scheduler::lane_uses() const {
  std::lock_guard lock(m_mu);
  return m_lane_uses;
}

} // namespace kforge::search
