#include "eval/statistics.hpp"

#include "core/error.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

namespace kforge::eval {

double median_ci_rel(std::vector<double> s) {
  const std::size_t n = s.size();
  if (n < 5) return std::numeric_limits<double>::infinity();
  std::sort(s.begin(), s.end());
  const double half = 0.98 * std::sqrt(static_cast<double>(n));
  const auto lo = static_cast<std::size_t>(std::max(0.0, std::floor(n / 2.0 - half)));
  const auto hi = static_cast<std::size_t>(std::min(n - 1.0, std::ceil(n / 2.0 + half)));
  const double med = n % 2 ? s[n / 2] : 0.5 * (s[n / 2 - 1] + s[n / 2]);
  if (med <= 0) return std::numeric_limits<double>::infinity();
  return (s[hi] - s[lo]) / (2.0 * med);
}

timing_summary summarize(const std::string& subject, std::vector<double> s, double target_rel_ci) {
  KFORGE_ASSERT(!s.empty());
  timing_summary t;
  t.subject = subject;
  t.samples = static_cast<int>(s.size());
  t.ci_rel = median_ci_rel(s);
  std::sort(s.begin(), s.end());
  const std::size_t n = s.size();
  t.median_s = n % 2 ? s[n / 2] : 0.5 * (s[n / 2 - 1] + s[n / 2]);
  t.min_s = s.front();
  t.max_s = s.back();
  t.mean_s = std::accumulate(s.begin(), s.end(), 0.0) / n;
  double var = 0;
  for (double x : s) var += (x - t.mean_s) * (x - t.mean_s);
  t.stdev_s = n > 1 ? std::sqrt(var / (n - 1)) : 0.0;
  t.p10_s = s[static_cast<std::size_t>(0.1 * (n - 1))];
  t.p90_s = s[static_cast<std::size_t>(0.9 * (n - 1))];
  t.converged = t.ci_rel <= target_rel_ci;
  if (!std::isfinite(t.ci_rel)) t.ci_rel = -1; // JSON has no infinity: -1 means "too few samples"
  return t;
}

} // namespace kforge::eval
