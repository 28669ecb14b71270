#pragma once
// The truth of every trial: the reference at the problem's dtype and the float64 oracle,
// computed by a worker that never loads candidate code (or, for a [torch] problem, by the
// PyTorch module through the bridge, on the same inputs); and the reference's own error
// against the oracle, which the tolerance policy scales.
//   auto t = worker::compute_truth(ctx, builds, plan.trials);   // t.oracle[{trial, 0, k}]
#include "worker/build_roles.hpp"
#include "worker/stage.hpp"
#include "worker/supervisor.hpp"

#include <map>
#include <vector>

namespace kforge::worker {

struct truth {
  std::map<output_key, eval::host_tensor> oracle, reference; // run is always 0
  nlohmann::json confinement; // the oracle worker's (worker_outcome::confinement); null for [torch]
};

/// @throws kforge::error (problem) when the reference fails on a trial or its worker does
/// not end cleanly: without truth nothing can be judged, and it is not the candidate's fault.
[[nodiscard]] truth compute_truth(const worker_context& ctx, const role_artifacts& builds, const nlohmann::json& trials);

/// The reference's error against the oracle on the first trial of each case, per output.
[[nodiscard]] std::vector<case_reference_error> reference_errors(const problem::problem& p,
                                                                 const nlohmann::json& trials, const truth& t);

} // namespace kforge::worker
