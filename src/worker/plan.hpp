#pragma once
// The trials of one evaluation: every case trials_per_case times with fresh seeds (or seeds
// from the user's --seed, to reproduce a failure), the hidden case, and the verification
// trials whose timed calls are re-verified.
//   auto rng = worker::evaluation_rng(opts.seed);
//   auto plan = worker::plan_trials(p, 3, true, rng);  // plan.trials[i] == {"case", "seed", "trial": i}
#include "problem/problem.hpp"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <optional>
#include <random>
#include <set>

namespace kforge::worker {

struct trial_plan {
  nlohmann::json trials = nlohmann::json::array(); // {"case", "seed", "trial"}, trial == its index
  /// The timed calls re-verified (role_time.cpp): an early call, one after sampling in the
  /// timed buffers, one in new buffers. Copies of verification trials, whose truth the
  /// oracle computes anyway, never the timed inputs. Empty when not timing.
  nlohmann::json rechecks = nlohmann::json::array();
  std::set<int> recheck_trials; // trials whose truth is kept until the timed calls are judged
};

/// The evaluation's one random stream: every seed it hands out comes from it, in a fixed
/// order, so one --seed reproduces a whole evaluation. Fresh randomness without a seed.
[[nodiscard]] std::mt19937_64 evaluation_rng(std::optional<std::uint64_t> seed);

/// @post trials.size() == trials_per_case * p.cases.size(), plus one for the hidden case
/// @post rechecks.size() == (timed ? 3 : 0)
[[nodiscard]] trial_plan plan_trials(const problem::problem& p, int trials_per_case, bool timed, std::mt19937_64& rng);

} // namespace kforge::worker
