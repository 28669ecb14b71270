#pragma once
// Summary statistics of timing samples.
//   summarize("candidate", {3e-3, 2e-3, 4e-3}) -> median 3e-3, min 2e-3, ...
#include "eval/result.hpp"

#include <vector>

namespace kforge::eval {

/// Half-width of a distribution-free 95% confidence interval of the median (order
/// statistics at n/2 -+ 0.98 sqrt(n)), relative to the median. Infinite for n < 5.
[[nodiscard]] double median_ci_rel(std::vector<double> samples);

/// @pre samples non-empty
[[nodiscard]] timing_summary summarize(const std::string& subject, std::vector<double> samples, double target_rel_ci);

} // namespace kforge::eval
