#pragma once
// Where a candidate is timed. Subjects (the candidate, the reference, the baselines) are
// timed interleaved sample by sample in alternating order, so their ratio is measured side
// by side under the same machine state. Each sample: rotate to the next input set, flush
// the caches, time one call. Warm-up calls are discarded; sampling stops when every
// subject's median has a relative 95% CI under the target (after min_samples), at
// max_samples, or when the time budget is spent.
// The interleaving does not care where a subject runs: `interleave` takes one sample at a
// time from each through a function, which times a call in this process (take_sample,
// time_interleaved) or asks a worker process for one (worker/timing.cpp: the candidate and
// the reference are timed in different processes, so neither can touch the other).
//   auto samples = time_interleaved(dev, {cand, ref}, cfg);                  // one process
//   auto samples = interleave({{"candidate", 3, ask_candidate}, {"reference", 3, ask_ref}}, cfg);
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
  /// Runs right after the timer stopped, before finish (optional): puts the outputs a call left
  /// in its own memory into the set (worker::kernel_library::place); returns the call's rc.
  std::function<int(int rc)> place;
};

/// One timed call.
struct sample {
  double seconds = 0;
  int rc = 0; // kf_forward's; non-zero ends timing
};

/// A subject seen from the interleaving: a way to take one sample on input set `rotation`.
/// `take` may throw to abandon timing (a worker that died): interleave lets it through.
struct sampler {
  std::string name;
  int rotations = 1;
  std::function<sample(int rotation)> take;
};

struct timing_samples {
  std::string subject;
  std::vector<double> samples; // seconds, in the order taken
  int failed_rc = 0;           // non-zero: a call returned this, timing stopped
};

/// One sample of a subject in this process: prepare, flush the caches (when `flush`), time
/// one call, then `finish` if it returned 0.
[[nodiscard]] sample take_sample(device::backend& dev, const timing_subject& s, int rotation, bool flush);

/// Samples every subject until the stopping rule (above) holds or a call fails.
/// @post result[i].subject == subjects[i].name
[[nodiscard]] std::vector<timing_samples> interleave(const std::vector<sampler>& subjects, const timing_config& cfg);

/// interleave() over subjects in this process.
[[nodiscard]] std::vector<timing_samples> time_interleaved(device::backend& dev, const std::vector<timing_subject>& subjects,
                                                           const timing_config& cfg);

} // namespace kforge::eval
