#include "worker/plan.hpp"

#include "eval/inputs.hpp"

namespace kforge::worker {

std::mt19937_64 evaluation_rng(std::optional<std::uint64_t> seed) {
  return std::mt19937_64(seed ? *seed : std::random_device{}() ^ (std::uint64_t{std::random_device{}()} << 32));
}

trial_plan plan_trials(const problem::problem& p, int trials_per_case, bool timed, std::mt19937_64& rng) {
  trial_plan plan;
  auto add_trial = [&](const std::string& case_name) {
    plan.trials.push_back({{"case", case_name}, {"seed", rng()}, {"trial", static_cast<int>(plan.trials.size())}});
  };
  for (int t = 0; t < trials_per_case; ++t)
    for (auto& c : p.cases) add_trial(c.name);
  // One trial the problem does not declare: hard rows at random positions (eval/inputs.hpp).
  if (p.eval.hidden_case && p.cases.size() >= 2) add_trial(eval::hidden_case);
  if (timed)
    for (std::size_t i = 0; i < 3; ++i) {
      plan.rechecks.push_back(plan.trials[i % plan.trials.size()]);
      plan.recheck_trials.insert(plan.rechecks.back()["trial"].get<int>());
    }
  return plan;
}

} // namespace kforge::worker
