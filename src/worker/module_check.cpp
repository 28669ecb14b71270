#include "worker/module_check.hpp"

#include "eval/device_kernels.hpp"
#include "worker/build_roles.hpp"
#include "worker/device_judge.hpp"

#include <random>

namespace kforge::worker {

std::optional<std::vector<case_reference_error>>
module_errors_on_device(const problem::problem& p, int device, std::uint64_t seed, const std::filesystem::path& exe,
                        std::string& why) {
  why = device_path_refused(p);
  if (!why.empty()) return std::nullopt;
  role_artifacts builds;
  builds.kernels = eval::build_device_kernels();
  std::mt19937_64 rng(seed);
  nlohmann::json trials = nlohmann::json::array();
  for (std::size_t c = 0; c < p.cases.size(); ++c)
    trials.push_back({{"trial", c}, {"case", p.cases[c].name}, {"seed", rng()}});
  const worker_context ctx{.p = p, .exe = exe.empty() ? default_worker_exe() : exe, .device = device,
                           .timeout_s = p.eval.timeout_s};
  try {
    device_judge j(ctx, builds, trials, 1, rng());
    for (std::size_t t = 0; t < trials.size(); ++t) j.load(0, static_cast<int>(t));
    auto errors = j.reference_errors();
    (void)j.finish();
    return errors;
  } catch (const device_path_unavailable& e) {
    why = e.what();
    return std::nullopt;
  }
}

} // namespace kforge::worker
