#include "eval/timer.hpp"

#include "eval/statistics.hpp"

#include <chrono>

namespace kforge::eval {

sample take_sample(device::backend& dev, const timing_subject& s, int rotation, bool flush) {
  if (s.prepare) s.prepare(rotation);
  if (flush) dev.flush_caches(s.touched ? s.touched(rotation) : std::vector<device::memory_region>{});
  sample out;
  out.seconds = dev.time_call([&] { return s.call(rotation); }, &out.rc);
  if (s.place) out.rc = s.place(out.rc);
  if (s.finish && out.rc == 0) s.finish(rotation);
  return out;
}

std::vector<timing_samples> interleave(const std::vector<sampler>& subjects, const timing_config& cfg) {
  std::vector<timing_samples> out;
  for (auto& s : subjects) out.push_back({s.name, {}, 0});
  std::vector<int> calls(subjects.size(), 0);
  const auto t0 = std::chrono::steady_clock::now();
  auto elapsed = [&] { return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(); };

  auto one = [&](std::size_t k, bool keep) {
    auto& s = subjects[k];
    const auto got = s.take(calls[k]++ % s.rotations);
    if (got.rc != 0) out[k].failed_rc = got.rc;
    else if (keep) out[k].samples.push_back(got.seconds);
  };
  auto failed = [&] {
    for (auto& o : out)
      if (o.failed_rc) return true;
    return false;
  };

  for (int w = 0; w < cfg.warmup && !failed(); ++w)
    for (std::size_t k = 0; k < subjects.size() && !failed(); ++k) one(k, false);

  for (int i = 0; i < cfg.max_samples && !failed(); ++i) {
    // Alternate the order each round so neither subject always runs right after the flush of the other.
    for (std::size_t j = 0; j < subjects.size() && !failed(); ++j) one(i % 2 ? subjects.size() - 1 - j : j, true);
    if (i + 1 < cfg.min_samples) continue;
    bool done = true;
    for (auto& o : out)
      if (median_ci_rel(o.samples) > cfg.target_rel_ci) done = false;
    if (done || elapsed() > cfg.budget_s) break;
  }
  return out;
}

std::vector<timing_samples> time_interleaved(device::backend& dev, const std::vector<timing_subject>& subjects,
                                             const timing_config& cfg) {
  std::vector<sampler> samplers;
  for (auto& s : subjects)
    samplers.push_back({s.name, s.rotations, [&dev, &s, flush = cfg.flush_caches](int r) {
                          return take_sample(dev, s, r, flush);
                        }});
  return interleave(samplers, cfg);
}

} // namespace kforge::eval
