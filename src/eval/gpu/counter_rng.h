#pragma once
// kforge's counter-based generator, one definition for the host (problem/distribution.cpp)
// and for kforge's own GPU kernels (eval/gpu/device_kernels.cu): element i of (seed, stream)
// depends on nothing else, so any split of the work, in any process, on either side, draws
// the same bits. Plain C++ (no kforge headers), so nvcc and NVRTC compile it as it is.
//   const auto k = kforge::rng::make_key(seed, stream);
//   double x = kforge::rng::draw_one(plan, k, i);   // plan: make_plan(kind, a, b)
// The integer steps are bitwise the same everywhere. normal, offset, logits, log_uniform and
// sparse's non-zero values go through log/cos/exp in double, which CUDA and glibc each
// compute to within an ulp or two but not by the same algorithm: a value may differ in its
// last bits between host and GPU (tests/gpu/draw.cpp measures by how much).
#include <cmath>
#include <cstdint>

#if defined(__CUDACC__) || defined(__CUDACC_RTC__)
#define KF_RNG_FN __host__ __device__ inline
#else
#define KF_RNG_FN inline
#endif

// A product that is rounded on its own, never fused with the sum that follows into one FMA
// (nvcc contracts a + b * c by default, the host build does not): without it a log_uniform
// value differed by up to 16 ulp, exp magnifying the FMA's different rounding (H200, 2026-12-04).
#if defined(__CUDA_ARCH__)
#define KF_RNG_MUL(x, y) __dmul_rn((x), (y))
#else
#define KF_RNG_MUL(x, y) ((x) * (y))
#endif

namespace kforge::rng {

inline constexpr std::uint64_t golden = 0x9E3779B97F4A7C15ull;

KF_RNG_FN constexpr std::uint64_t mix64(std::uint64_t z) { // splitmix64's finaliser
  z ^= z >> 30;
  z *= 0xBF58476D1CE4E5B9ull;
  z ^= z >> 27;
  z *= 0x94D049BB133111EBull;
  z ^= z >> 31;
  return z;
}

// High 64 bits of the 128-bit product a * b.
// (Portable and constexpr: the same code on both sides; __umul64hi would save a few instructions.)
KF_RNG_FN constexpr std::uint64_t mul_hi(std::uint64_t a, std::uint64_t b) {
  const std::uint64_t a_lo = a & 0xFFFFFFFFu, a_hi = a >> 32, b_lo = b & 0xFFFFFFFFu, b_hi = b >> 32;
  const std::uint64_t lo_lo = a_lo * b_lo, hi_lo = a_hi * b_lo, lo_hi = a_lo * b_hi, hi_hi = a_hi * b_hi;
  const std::uint64_t mid = (lo_lo >> 32) + (hi_lo & 0xFFFFFFFFu) + lo_hi;
  return hi_hi + (hi_lo >> 32) + (mid >> 32);
}

struct key {
  std::uint64_t k0 = 0, k1 = 0;
};

KF_RNG_FN key make_key(std::uint64_t seed, std::uint64_t stream) {
  const std::uint64_t s = mix64(seed ^ 0x243F6A8885A308D3ull);
  key k;
  k.k0 = mix64(s ^ mix64(stream * golden + 0x13198A2E03707344ull));
  k.k1 = mix64(k.k0 ^ 0xA4093822299F31D0ull);
  return k;
}

// Up to four independent draws per element (j = 0..3).
KF_RNG_FN std::uint64_t bits(const key& k, std::uint64_t i, unsigned j) {
  const std::uint64_t counter = i * 4 + j + 1;
  return mix64(mix64(k.k0 + counter * golden) ^ k.k1);
}

// Uniform in the open interval (0, 1), 53 random bits.
KF_RNG_FN double unit(const key& k, std::uint64_t i, unsigned j) {
  return KF_RNG_MUL(static_cast<double>(bits(k, i, j) >> 11) + 0.5, 0x1p-53);
}

// Standard normal by Box-Muller from draws j and j + 1 (the cosine branch only).
KF_RNG_FN double normal(const key& k, std::uint64_t i, unsigned j) {
  const double u1 = unit(k, i, j), u2 = unit(k, i, j + 1);
  return KF_RNG_MUL(sqrt(KF_RNG_MUL(-2.0, log(u1))), cos(KF_RNG_MUL(6.283185307179586476925, u2)));
}

// The kinds, numbered as problem::distribution_kind.
enum kind : int { normal_kind, uniform_kind, offset_kind, log_uniform_kind, logits_kind, sparse_kind, int_range_kind };

// What one element needs of a distribution, computed once.
struct plan {
  int kind = normal_kind;
  double a = 0, b = 1; // the parameters as written
  double lo = 0, hi = 0; // log_uniform: log(a), log(b)
  std::int64_t first = 0;
  std::uint64_t count = 1; // int_range: a, b - a + 1
};

KF_RNG_FN plan make_plan(int kind, double a, double b) {
  plan p;
  p.kind = kind;
  p.a = a;
  p.b = b;
  if (kind == log_uniform_kind) {
    p.lo = log(a);
    p.hi = log(b);
  }
  if (kind == int_range_kind) { // exact integers within +/-2^53: the count fits in 64 bits
    p.first = static_cast<std::int64_t>(a);
    p.count = static_cast<std::uint64_t>(static_cast<std::int64_t>(b) - p.first) + 1;
  }
  return p;
}

KF_RNG_FN double draw_one(const plan& p, const key& k, std::uint64_t i) {
  switch (p.kind) {
  case normal_kind:
  case offset_kind:
    return p.a + KF_RNG_MUL(p.b, normal(k, i, 0));
  case logits_kind:
    return 0.0 + KF_RNG_MUL(p.a, normal(k, i, 0));
  case uniform_kind: {
    const double v = p.a + KF_RNG_MUL(p.b - p.a, unit(k, i, 0));
    return fmin(fmax(v, p.a), p.b);
  }
  case log_uniform_kind: {
    const double mag = fmin(fmax(exp(p.lo + KF_RNG_MUL(p.hi - p.lo, unit(k, i, 0))), p.a), p.b);
    return (bits(k, i, 1) >> 63) ? -mag : mag;
  }
  case sparse_kind:
    return unit(k, i, 0) < p.a ? KF_RNG_MUL(p.b, normal(k, i, 1)) : 0.0;
  default: // int_range
    return static_cast<double>(p.first + static_cast<std::int64_t>(mul_hi(bits(k, i, 0), p.count)));
  }
}

} // namespace kforge::rng
