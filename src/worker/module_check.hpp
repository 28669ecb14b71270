#pragma once
// A [torch] problem's module checked on its own (kforge check): one trial per input case, run
// at the problem's dtype and in float64 on the GPU-resident path (device_judge.hpp: inputs
// drawn on the device, the module run on memory the judge shares, its error against float64
// measured there). Nothing crosses the host; the host path (bridge::torch_truth) remains for
// where this one is unavailable.
//   std::string why;
//   if (auto e = worker::module_errors_on_device(p, 0, seed, exe, why)) ... else fall back (why)
#include "problem/problem.hpp"
#include "worker/stage.hpp"

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace kforge::worker {

/// The module's error on one trial of each case (trials seeded from `seed`), or nothing when
/// the GPU-resident path is refused or unavailable here (`why` says why).
/// @throws kforge::error (problem) when the module fails
[[nodiscard]] std::optional<std::vector<case_reference_error>>
module_errors_on_device(const problem::problem& p, int device, std::uint64_t seed, const std::filesystem::path& exe,
                        std::string& why);

} // namespace kforge::worker
