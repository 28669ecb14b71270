#include "eval/timer.hpp"

#include "eval/statistics.hpp"

#include <chrono>

namespace kforge::eval {

std::vector<timing_samples> time_interleaved(device::backend& dev, const std::vector<timing_subject>& subjects,
                                             const timing_config& cfg) {
  std::vector<timing_samples> out;
  for (auto& s : subjects) out.push_back({s.name, {}, 0});
  std::vector<int> rotation(subjects.size(), 0);
  const auto t0 = std::chrono::steady_clock::now();
  auto elapsed = [&] { return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(); };

  auto one = [&](std::size_t k, bool keep) {
    auto& s = subjects[k];
    const int rot = rotation[k]++ % s.rotations;
    if (s.prepare) s.prepare(rot);
    if (cfg.flush_caches) dev.flush_caches(s.touched ? s.touched(rot) : std::vector<device::memory_region>{});
    int rc = 0;
    const double t = dev.time_call([&] { return s.call(rot); }, &rc);
    if (s.finish && rc == 0) s.finish(rot);
    if (rc != 0) out[k].failed_rc = rc;
    else if (keep) out[k].samples.push_back(t);
  };
  auto failed = [&] {
    for (auto& o : out)
      if (o.failed_rc) return true;
    return false;
  };

  for (int w = 0; w < cfg.warmup && !failed(); ++w)
    for (std::size_t k = 0; k < subjects.size(); ++k) one(k, false);

  for (int i = 0; i < cfg.max_samples && !failed(); ++i) {
    // Alternate the order each round so neither subject always runs right after the flush of the other.
    for (std::size_t j = 0; j < subjects.size(); ++j) one(i % 2 ? subjects.size() - 1 - j : j, true);
    if (i + 1 < cfg.min_samples) continue;
    bool done = true;
    for (auto& o : out)
      if (median_ci_rel(o.samples) > cfg.target_rel_ci) done = false;
    if (done || elapsed() > cfg.budget_s) break;
  }
  return out;
}

} // namespace kforge::eval
