#pragma once
// The parent's side of timing a candidate that passed verification: the timing worker
// (candidate, reference and baselines on the same rotating inputs, sample by sample), the
// [torch] reference and torch.compile through the bridge, and the checks on the times
// themselves: under the device's physical floor (impossible_time), or a speedup large
// enough that a person should look (review).
//   auto timed = worker::time_subjects(ctx, builds, plan.rechecks, budget, rng(), rec);
//   j.timed_outputs(plan.rechecks, timed);  worker::check_plausibility(p, model, rec);
#include "worker/build_roles.hpp"
#include "worker/device_judge.hpp"
#include "worker/early_workers.hpp"
#include "worker/stage.hpp"

#include <map>
#include <memory>

namespace kforge::worker {

/// Times the candidate, the reference (unless [torch]) and every baseline; each subject's
/// summary goes to rec.timing, a failure during timing to rec.check.
/// @return the outputs of the re-verified timed calls, keyed {place in rechecks, 0, output}
[[nodiscard]] std::map<output_key, eval::host_tensor> time_subjects(const worker_context& ctx,
                                                                    const role_artifacts& builds,
                                                                    const nlohmann::json& rechecks, double budget_s,
                                                                    std::uint64_t seed, recorder& rec);

/// The same on the GPU-resident path: the candidate's rotations are the judge's sets 1..3
/// (set 4 is the one never timed before), the trusted worker draws the same inputs on the
/// device, and the re-verified timed calls are judged in place by the judge: their verdicts
/// (timed_output) go to rec.check directly. The workers start at construction, so that their
/// start overlaps verification; a failed candidate's are killed with the object, unused.
///   device_timing t(ctx, builds, dj, budget, seed);   ... verify ...   t.run(plan.rechecks, rec);
class device_timing {
public:
  /// With `early` (defer_time_worker's, started during the build) the candidate's worker is
  /// that one, completed.
  device_timing(const worker_context& ctx, const role_artifacts& builds, device_judge& dj, double budget_s,
                std::uint64_t seed, std::unique_ptr<deferred_worker> early = nullptr);
  ~device_timing();
  device_timing(const device_timing&) = delete;
  device_timing& operator=(const device_timing&) = delete;
  /// Samples until the stopping rule holds, re-verifies the timed calls, ends both workers. Once.
  void run(const nlohmann::json& rechecks, recorder& rec);

private:
  struct state;
  std::unique_ptr<state> m;
};
/// The candidate's timing worker for device_timing, started before the build ends
/// (early_workers.hpp) on `library`, a staged path; `warm`: modules it imports meanwhile.
[[nodiscard]] std::unique_ptr<deferred_worker> defer_time_worker(const worker_context& ctx,
                                                                 const std::filesystem::path& library, double budget_s,
                                                                 const std::vector<std::string>& warm);
/// How many shared sets the GPU-resident path needs: verification's, the rotations', one more.
inline constexpr int device_sets = 1 + 3 + 1;

/// A [torch] problem's reference: eager PyTorch and (when asked) torch.compile, timed by the
/// bridge's helper with the same protocol; one that cannot be timed is a review note, not a
/// failure. With `reuse`, a measurement under an hour old of the same problem on the same
/// device model is taken instead (searches: they do not change between candidates). With the
/// evaluation's judge `dj` (GPU-resident path) the inputs are drawn there, else written to a file.
void time_torch_reference(const worker_context& ctx, double budget_s, std::uint64_t seed, bool reuse,
                          const std::string& device_model, device_judge* dj, recorder& rec);

/// impossible_time against the device's calibrated roofline (when calibrated: ev.roofline),
/// and a review flag for a speedup above the problem's review_speedup.
void check_plausibility(const problem::problem& p, const std::string& device_model, recorder& rec);

} // namespace kforge::worker
