#pragma once
// Judging the candidate's outputs, in the parent, as they arrive: each against its trial's
// truth (eval::compare_output), the repeat call bitwise against the first
// (eval::compare_repeat). Outputs are dropped once judged (ten calls of a 4096x65536
// softmax are 10 GiB), and a trial's truth once both its calls are, unless a timed call
// is re-verified against it later (timed_outputs).
//   worker::judge j(p, plan.trials, plan.recheck_trials, truth, add_check);
//   j.output(trial, run, k, tensor);  ...  j.timed_outputs(plan.rechecks, timed);
#include "worker/stage.hpp"
#include "worker/truth.hpp"

#include <map>
#include <set>

namespace kforge::worker {

class judge {
public:
  /// `keep`: trials whose truth outlives verification (the rechecks').
  judge(const problem::problem& p, const nlohmann::json& trials, std::set<int> keep, truth& t, check_sink add);

  /// One output of the verify worker: trial `t`, call `run` (0, or 1: the repeat), output `k`.
  /// A malformed or repeated output is a protocol_error check; indices out of range are ignored.
  void output(int t, int run, std::size_t k, eval::host_tensor got);
  /// Whether any output arrived (a worker that sends none has not been judged).
  [[nodiscard]] bool any_output() const { return m_any_output; }

  /// The re-verified timed calls: `timed[{i, 0, k}]` is output k of the call on rechecks[i]'s
  /// inputs. One timed_output check per call that came back, failed on its first failing check.
  void timed_outputs(const nlohmann::json& rechecks, const std::map<output_key, eval::host_tensor>& timed) const;

private:
  const problem::problem& m_p;
  const nlohmann::json& m_trials;
  std::set<int> m_keep;
  truth& m_truth;
  check_sink m_add;
  std::map<output_key, eval::host_tensor> m_first_call; // run 0's output, until run 1 is compared with it
  bool m_any_output = false;
};

} // namespace kforge::worker
