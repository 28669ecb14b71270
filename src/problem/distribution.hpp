#pragma once
// Named, seeded input generators. A spec is written in problem.toml as a call:
//   "normal(0, 1)"  "uniform(-1, 1)"  "offset(1000, 0.01)"  "log_uniform(1e-6, 1e6)"
//   "logits(100)"   "sparse(0.05, 1)"  "int_range(0, 9)"
// and drawn from a counter-based generator, so the same (seed, stream) gives the same
// values in every process and on every backend.
//   auto d = parse_distribution("normal(0, 1)");  fill(d, seed, stream, out, n);
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace kforge::problem {

enum class distribution_kind {
  normal,      // normal(mean, std)
  uniform,     // uniform(lo, hi)
  offset,      // offset(mean, std): a large mean with a tiny spread; breaks one-pass variance
  log_uniform, // log_uniform(lo, hi): magnitudes log-uniform in [lo, hi], random sign
  logits,      // logits(scale): normal(0, scale); large scales overflow a softmax without max-subtraction
  sparse,      // sparse(density, std): zero except with probability density, then normal(0, std)
  int_range,   // int_range(lo, hi): integers uniform in [lo, hi], inclusive
};

struct distribution {
  distribution_kind kind = distribution_kind::normal;
  double a = 0.0, b = 1.0; // the two parameters, in the order written above
  std::string text;        // as written, for reports
};

/// The kind's name as a spec writes it ("log_uniform").
[[nodiscard]] std::string_view distribution_name(distribution_kind k);

/// Parses "name(a, b)". @throws kforge::error (problem) with the reason; callers add file and key.
[[nodiscard]] distribution parse_distribution(const std::string& spec);

/// Fills out[0..n) with draws. `stream` separates tensors that share a seed.
/// @post identical (d, seed, stream, n) give identical values.
void draw(const distribution& d, std::uint64_t seed, std::uint64_t stream, double* out, std::size_t n);

} // namespace kforge::problem
