#include "device/backend.hpp"
#include "eval/buffers.hpp"
#include "eval/statistics.hpp"
#include "eval/timer.hpp"

#include <gtest/gtest.h>

#include <cstring>

using namespace kforge;

TEST(statistics, summary_of_known_samples) {
  auto s = eval::summarize("c", {5, 1, 3, 2, 4}, 0.01);
  EXPECT_EQ(s.samples, 5);
  EXPECT_EQ(s.median_s, 3);
  EXPECT_EQ(s.min_s, 1);
  EXPECT_EQ(s.max_s, 5);
  EXPECT_DOUBLE_EQ(s.mean_s, 3);
  EXPECT_FALSE(s.converged);
}

TEST(statistics, median_ci_shrinks_with_tight_samples) {
  std::vector<double> tight(200, 1.0);
  for (std::size_t i = 0; i < tight.size(); ++i) tight[i] += 1e-4 * (i % 7);
  EXPECT_LT(eval::median_ci_rel(tight), 0.01);
  std::vector<double> wide;
  for (int i = 0; i < 200; ++i) wide.push_back(1.0 + (i % 10));
  EXPECT_GT(eval::median_ci_rel(wide), 0.01);
  EXPECT_TRUE(std::isinf(eval::median_ci_rel({1, 2})));
}

TEST(buffers, guards_catch_writes_just_outside) {
  auto dev = device::make_backend(problem::backend_kind::cpu);
  eval::guarded_buffer b(*dev, 64, 42);
  EXPECT_FALSE(b.check_guards().has_value());
  static_cast<unsigned char*>(b.data())[64] ^= 0x01;
  auto g = b.check_guards();
  ASSERT_TRUE(g.has_value());
  EXPECT_EQ(*g, "1 bytes after the end");
  eval::guarded_buffer c(*dev, 64, 43);
  static_cast<unsigned char*>(c.data())[-3] ^= 0x80;
  ASSERT_TRUE(c.check_guards().has_value());
  EXPECT_EQ(*c.check_guards(), "3 bytes before the start");
}

TEST(timer, interleaves_subjects_and_stops_at_max_samples) {
  auto dev = device::make_backend(problem::backend_kind::cpu);
  std::vector<std::string> order;
  eval::timing_config cfg;
  cfg.warmup = 1;
  cfg.min_samples = 3;
  cfg.max_samples = 4;
  cfg.target_rel_ci = 0; // never converges: runs to max_samples
  cfg.flush_caches = false;
  std::vector<eval::timing_subject> subj = {
      {"a", [&](int) { order.push_back("a"); return 0; }, nullptr, nullptr, 2},
      {"b", [&](int) { order.push_back("b"); return 0; }, nullptr, nullptr, 2},
  };
  auto r = eval::time_interleaved(*dev, subj, cfg);
  ASSERT_EQ(r.size(), 2u);
  EXPECT_EQ(r[0].samples.size(), 4u);
  EXPECT_EQ(r[1].samples.size(), 4u);
  // warm-up a b, then rounds alternate order: a b, b a, a b, b a
  std::vector<std::string> want = {"a", "b", "a", "b", "b", "a", "a", "b", "b", "a"};
  EXPECT_EQ(order, want);
}

TEST(timer, a_failing_call_stops_timing_with_its_rc) {
  auto dev = device::make_backend(problem::backend_kind::cpu);
  eval::timing_config cfg;
  cfg.flush_caches = false;
  int n = 0;
  auto r = eval::time_interleaved(*dev, {{"x", [&](int) { return ++n > 3 ? 7 : 0; }, nullptr, nullptr, 1}}, cfg);
  EXPECT_EQ(r[0].failed_rc, 7);
  EXPECT_LT(r[0].samples.size(), 5u);
}

#include "eval/inputs.hpp"
#include "problem/problem.hpp"
#include "test_util.hpp"

TEST(inputs, oracle_inputs_are_the_nominal_values_widened) {
  const auto p = problem::load(test::problems_dir() / "layernorm");
  for (auto& c : p.cases) {
    const auto nominal = eval::make_inputs(p, c, 99, eval::precision::nominal);
    const auto drawn = eval::make_inputs(p, c, 99, eval::precision::oracle);
    const auto widened = eval::widen_to_oracle(p, nominal);
    ASSERT_EQ(drawn.size(), widened.size());
    for (std::size_t k = 0; k < drawn.size(); ++k) {
      EXPECT_EQ(drawn[k].dtype, KF_F64);
      EXPECT_EQ(drawn[k].bytes, widened[k].bytes) << c.name << " input " << k;
    }
  }
}
