#pragma once
// Test outputs for the judge's scan (tests/eval/shared_sets.cpp on the host, tests/gpu/device_path.cpp
// on the GPU): n normal values as the float64 oracle, rounded to f32 as the reference, and the
// candidate the reference's values, each times (1 + noise * a normal draw) when noise > 0.
#include "core/dtype.hpp"
#include "eval/buffers.hpp"

#include <cstdint>
#include <random>
#include <vector>

namespace kforge::test {

struct scan_data {
  eval::host_tensor oracle{KF_F64, {}}, reference{KF_F32, {}}, candidate{KF_F32, {}};
};

inline scan_data normal_outputs(std::size_t n, std::uint64_t seed, double noise) {
  scan_data d;
  d.oracle.bytes.resize(n * 8);
  d.reference.bytes.resize(n * 4);
  d.candidate.bytes.resize(n * 4);
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> g;
  for (std::size_t i = 0; i < n; ++i) {
    const double x = g(rng);
    store_from_double(d.oracle.bytes.data(), KF_F64, i, x);
    store_from_double(d.reference.bytes.data(), KF_F32, i, x);
    store_from_double(d.candidate.bytes.data(), KF_F32, i, noise > 0 ? x * (1 + noise * g(rng)) : x);
  }
  return d;
}

} // namespace kforge::test
