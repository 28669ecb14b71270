#pragma once
// Where a candidate is timed. Subjects (the candidate and the reference, later the
// baselines) are timed in the same process, interleaved sample by sample in
// alternating order, so their ratio is measured side by side under the same machine
// state. Each sample: rotate to the next input set, flush the caches, time one call.
// Warm-up calls are discarded; sampling stops when every subject's median has a
// relative 95% CI under the target (after min_samples), at max_samples, or when the
// time budget is spent.
//   auto samples = time_interleaved(dev, {cand, ref}, cfg);
#include "device/backend.hpp"

#include <functional>
#include <string>
#include <vector>

namespace kforge::eval {

struct timing_config {
  double budget_s = 2.0;   // wall-clock budget for the whole timing phase, all subjects
  int warmup = 2;          // calls per subject discarded before sampling
  int min_samples = 10;
  int max_samples = 1000;
  double target_rel_ci = 0.01;
  bool flush_caches = true; // cold samples: flush before every call
};

struct timing_subject {
  std::string name;
  /// Calls the implementation on input set `rotation` (0..rotations-1); returns kf_forward's rc.
  std::function<int(int rotation)> call;
  /// Runs before the cache flush, untimed: poisons the outputs of input set `rotation`.
  std::function<void(int rotation)> prepare;
  /// The memory a call on input set `rotation` touches, for the cache flush.
  std::function<std::vector<device::memory_region>(int rotation)> touched;
  int rotations = 1;
  /// Runs after the timed call is complete, untimed (optional): e.g. reads its outputs.
  std::function<void(int rotation)> finish;
};

struct timing_samples {
  std::string subject;
  std::vector<double> samples; // seconds, in the order taken
  int failed_rc = 0;           // non-zero: a call returned this, timing stopped
};

[[nodiscard]] std::vector<timing_samples> time_interleaved(device::backend& dev, const std::vector<timing_subject>& subjects,
                                                           const timing_config& cfg);

} // namespace kforge::eval
