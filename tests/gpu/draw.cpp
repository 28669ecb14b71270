// kforge's inputs drawn on the GPU (eval/gpu/device_kernels.cu) against the host draw
// (problem::draw), the same counter-based generator (eval/gpu/counter_rng.h) on both sides.
// Bitwise where the math is integer or IEEE-exact (uniform, int_range, sparse's zero
// pattern); within a few ulps where it goes through log/cos/exp, whose CUDA and glibc
// versions are each within an ulp or two of the true value but are not the same functions.
// Printed: per kind, how many values differ and by how many ulps; the draw's GPU time.
#include "build/compiler.hpp"
#include "problem/distribution.hpp"
#include "test_util.hpp"

#include <gtest/gtest.h>

#include <dlfcn.h>

#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

using namespace kforge;

namespace {

using draw_fn = int (*)(int, double, double, std::uint64_t, std::uint64_t, int, void*, std::uint64_t, double*);

draw_fn load_draw() {
  const auto src = test::source_dir() / "src" / "eval" / "gpu" / "device_kernels.cu";
  auto a = build::compile_nvcc({.source = src, .role = "draw"});
  EXPECT_TRUE(a.ok) << a.diagnostics;
  if (!a.ok) return nullptr;
  void* h = ::dlopen(a.library.c_str(), RTLD_NOW | RTLD_LOCAL);
  EXPECT_NE(h, nullptr) << ::dlerror();
  return h ? reinterpret_cast<draw_fn>(::dlsym(h, "kf_draw_to_host")) : nullptr;
}

// Distance in ulps between two doubles of the same sign (bit patterns are ordered).
std::uint64_t ulps(double x, double y) {
  if (x == y) return 0;
  std::int64_t a, b;
  std::memcpy(&a, &x, 8);
  std::memcpy(&b, &y, 8);
  if ((a < 0) != (b < 0)) return ~0ull;
  return static_cast<std::uint64_t>(a > b ? a - b : b - a);
}

} // namespace

TEST(gpu_draw, the_gpu_draws_what_the_host_draws) {
  test::cache_env cache;
  const draw_fn draw = load_draw();
  ASSERT_NE(draw, nullptr);
  struct kind_case {
    const char* spec;
    std::uint64_t max_ulps; // 0: bitwise
  };
  const kind_case cases[] = {{"uniform(-1, 1)", 0},      {"int_range(-5, 9)", 0},   {"normal(0, 1)", 8},
                             {"offset(1000, 0.01)", 8},  {"logits(100)", 8},        {"log_uniform(1e-6, 1e6)", 8},
                             {"sparse(0.05, 1)", 8}};
  const std::size_t n = std::size_t{1} << 22;
  std::vector<double> host(n), dev(n);
  std::vector<float> dev32(n);
  for (const auto& c : cases) {
    const auto d = problem::parse_distribution(c.spec);
    problem::draw(d, 20261204, 5, host.data(), n);
    ASSERT_EQ(draw(static_cast<int>(d.kind), d.a, d.b, 20261204, 5, 0, dev.data(), n, nullptr), 0) << c.spec;
    ASSERT_EQ(draw(static_cast<int>(d.kind), d.a, d.b, 20261204, 5, 1, dev32.data(), n, nullptr), 0) << c.spec;
    std::size_t differ = 0, differ32 = 0, zeros_differ = 0;
    std::uint64_t worst = 0;
    for (std::size_t i = 0; i < n; ++i) {
      const auto u = ulps(host[i], dev[i]);
      differ += u != 0;
      worst = std::max(worst, u);
      differ32 += static_cast<float>(host[i]) != dev32[i];
      zeros_differ += (host[i] == 0.0) != (dev[i] == 0.0);
    }
    std::printf("%-24s %8zu of %zu doubles differ (worst %llu ulp); %zu floats differ\n", c.spec, differ, n,
                static_cast<unsigned long long>(worst), differ32);
    EXPECT_LE(worst, c.max_ulps) << c.spec;
    EXPECT_EQ(zeros_differ, 0u) << c.spec << ": the zero pattern is integer math";
    // A float differs only where the double sat within an ulp or two of a float rounding boundary.
    EXPECT_LE(differ32, c.max_ulps ? n / 100000 : 0) << c.spec;
  }
}

TEST(gpu_draw, a_gibibyte_of_inputs_in_milliseconds) {
  test::cache_env cache;
  const draw_fn draw = load_draw();
  ASSERT_NE(draw, nullptr);
  const std::size_t n = std::size_t{1} << 28; // 1 GiB of floats, softmax (4096, 65536)
  std::vector<float> out(n);
  const auto d = problem::parse_distribution("logits(100)");
  double gpu_s = 0;
  ASSERT_EQ(draw(static_cast<int>(d.kind), d.a, d.b, 7, 0, 1, out.data(), n, &gpu_s), 0);
  std::vector<double> host(std::size_t{1} << 24);
  const auto t0 = std::chrono::steady_clock::now();
  problem::draw(d, 7, 0, host.data(), host.size());
  const double host_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() * 16;
  std::printf("logits(100), 2^28 values: GPU draw %.2f ms (%.0f GB/s of floats); host draw (all cores, from 2^24) %.0f ms\n",
              gpu_s * 1e3, n * 4 / gpu_s / 1e9, host_s * 1e3);
  EXPECT_GT(gpu_s, 0);
  EXPECT_TRUE(std::isfinite(out[n - 1]));
}
