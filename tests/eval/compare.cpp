// The numerical checks, each with an output that violates it and one that must pass.
#include "core/dtype.hpp"
#include "eval/compare.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

using namespace kforge;
using eval::host_tensor;

namespace {

problem::tensor_spec spec(std::vector<int64_t> shape, kf_dtype dt = KF_F32) {
  problem::tensor_spec s;
  s.name = "y";
  s.role = problem::tensor_role::output;
  s.dtype = dt;
  s.follows_real = dtype_is_real(dt);
  s.shape = std::move(shape);
  return s;
}

host_tensor tensor(kf_dtype dt, const std::vector<double>& v) {
  host_tensor t{dt, std::vector<std::uint8_t>(v.size() * dtype_size(dt))};
  for (std::size_t i = 0; i < v.size(); ++i) store_from_double(t.bytes.data(), dt, i, v[i]);
  return t;
}

// An oracle, a float reference with realistic rounding, and a candidate equal to the reference.
struct fixture {
  std::vector<double> truth;
  host_tensor oracle, ref;
  explicit fixture(std::size_t n = 64) {
    for (std::size_t i = 0; i < n; ++i) truth.push_back(std::sin(0.37 * i + 0.1) * 3.0 + 1.0 / 3.0);
    oracle = tensor(KF_F64, truth);
    ref = tensor(KF_F32, truth); // rounded to float: error ~ 1e-7 relative
  }
};

const eval::check_result& find(const std::vector<eval::check_result>& cs, const std::string& name) {
  for (auto& c : cs)
    if (c.name == name) return c;
  throw std::runtime_error("no check " + name);
}

} // namespace

TEST(compare, reference_itself_passes_every_check) {
  fixture f;
  auto cs = eval::compare_output(spec({8, 8}), {}, f.ref, f.oracle, f.ref);
  ASSERT_EQ(cs.size(), 3u);
  for (auto& c : cs) EXPECT_TRUE(c.passed) << c.name << ": " << c.message;
  EXPECT_NEAR(find(cs, "tolerance").detail["error_ratio"].get<double>(), 1.0, 1e-12);
}

TEST(compare, slightly_different_rounding_within_alpha_passes) {
  fixture f;
  auto c = f.ref;
  // Move every element by one float ulp: a different but honest summation order.
  for (std::size_t i = 0; i < f.truth.size(); ++i) {
    float x;
    std::memcpy(&x, c.bytes.data() + 4 * i, 4);
    x = std::nextafter(x, 100.0f);
    std::memcpy(c.bytes.data() + 4 * i, &x, 4);
  }
  EXPECT_TRUE(find(eval::compare_output(spec({64}), {}, c, f.oracle, f.ref), "tolerance").passed);
}

TEST(compare, precision_downgrade_to_bfloat16_fails_although_allclose_1e2_would_pass) {
  fixture f;
  std::vector<double> bf;
  for (double t : f.truth) {
    unsigned char b[2];
    store_from_double(b, KF_BF16, 0, t);
    bf.push_back(load_as_double(b, KF_BF16, 0));
    ASSERT_LE(std::fabs(bf.back() - t), 1e-2 + 1e-2 * std::fabs(t)); // a loose allclose passes
  }
  auto cs = eval::compare_output(spec({64}), {}, tensor(KF_F32, bf), f.oracle, f.ref);
  const auto& tol = find(cs, "tolerance");
  EXPECT_FALSE(tol.passed);
  EXPECT_GT(tol.detail["error_ratio"].get<double>(), 100.0);
  EXPECT_NE(tol.message.find("worst element y["), std::string::npos);
  EXPECT_NE(tol.message.find("expected"), std::string::npos);
}

TEST(compare, one_wrong_element_is_named_with_its_expected_value) {
  fixture f(16);
  auto v = f.truth;
  v[11] += 0.5;
  auto cs = eval::compare_output(spec({4, 4}), {}, tensor(KF_F32, v), f.oracle, f.ref);
  const auto& tol = find(cs, "tolerance");
  EXPECT_FALSE(tol.passed);
  EXPECT_EQ(tol.detail["worst"]["element"], "y[2, 3]");
  EXPECT_EQ(tol.detail["worst"]["index"], 11);
  EXPECT_NE(tol.message.find("y[2, 3]"), std::string::npos);
}

TEST(compare, poisoned_elements_are_unwritten_not_nan) {
  fixture f(16);
  auto c = f.ref;
  std::memset(c.bytes.data() + 4 * 5, 0xFF, 4 * 3);
  auto cs = eval::compare_output(spec({16}), {}, c, f.oracle, f.ref);
  const auto& u = find(cs, "unwritten");
  EXPECT_FALSE(u.passed);
  EXPECT_EQ(u.detail["count"], 3);
  EXPECT_EQ(u.detail["first"], "y[5]");
  EXPECT_TRUE(find(cs, "nonfinite").passed); // poison is not counted twice
}

TEST(compare, computed_nan_where_oracle_is_finite_fails_nonfinite) {
  fixture f(16);
  auto v = f.truth;
  v[3] = NAN;
  auto cs = eval::compare_output(spec({16}), {}, tensor(KF_F32, v), f.oracle, f.ref);
  EXPECT_TRUE(find(cs, "unwritten").passed);
  const auto& n = find(cs, "nonfinite");
  EXPECT_FALSE(n.passed);
  EXPECT_NE(n.message.find("y[3]"), std::string::npos);
}

TEST(compare, infinities_must_match_the_oracle_position_by_position) {
  std::vector<double> truth = {1.0, INFINITY, -INFINITY, NAN};
  auto oracle = tensor(KF_F64, truth), ref = tensor(KF_F32, truth);
  EXPECT_TRUE(find(eval::compare_output(spec({4}), {}, ref, oracle, ref), "nonfinite").passed);
  auto swapped = tensor(KF_F32, {1.0, -INFINITY, INFINITY, NAN});
  EXPECT_FALSE(find(eval::compare_output(spec({4}), {}, swapped, oracle, ref), "nonfinite").passed);
  auto finite = tensor(KF_F32, {1.0, 3e38, -3e38, 0.0});
  EXPECT_FALSE(find(eval::compare_output(spec({4}), {}, finite, oracle, ref), "nonfinite").passed);
}

TEST(compare, where_the_reference_overflows_agreeing_with_it_is_accepted) {
  auto oracle = tensor(KF_F64, {1.0, 1e39}); // finite in double
  auto ref = tensor(KF_F32, {1.0, 1e39});    // +Inf in float
  EXPECT_TRUE(find(eval::compare_output(spec({2}), {}, ref, oracle, ref), "nonfinite").passed);
}

TEST(compare, rtol_policy_is_per_element) {
  problem::tolerance_spec tol;
  tol.policy = problem::tolerance_policy::rtol;
  tol.rtol = 1e-12;
  std::vector<double> truth = {1.0, 2.0, 1e-3};
  auto oracle = tensor(KF_F64, truth);
  auto ok = tensor(KF_F64, {1.0 + 1e-13, 2.0, 1e-3});
  EXPECT_TRUE(find(eval::compare_output(spec({3}, KF_F64), tol, ok, oracle, oracle), "tolerance").passed);
  auto bad = tensor(KF_F64, {1.0, 2.0, 1e-3 * (1 + 1e-10)});
  const auto c = find(eval::compare_output(spec({3}, KF_F64), tol, bad, oracle, oracle), "tolerance");
  EXPECT_FALSE(c.passed);
  EXPECT_EQ(c.detail["worst"]["element"], "y[2]");
}

TEST(compare, exact_reference_leaves_only_the_floor) {
  // f64 problem under the ratio policy: the reference is the oracle, so the floor decides.
  std::vector<double> truth = {1.0, -2.0, 0.5};
  auto oracle = tensor(KF_F64, truth);
  auto near = tensor(KF_F64, {1.0 + 4e-16, -2.0, 0.5});
  EXPECT_TRUE(find(eval::compare_output(spec({3}, KF_F64), {}, near, oracle, oracle), "tolerance").passed);
  auto far = tensor(KF_F64, {1.0 + 1e-9, -2.0, 0.5});
  EXPECT_FALSE(find(eval::compare_output(spec({3}, KF_F64), {}, far, oracle, oracle), "tolerance").passed);
}

TEST(compare, integer_outputs_must_be_exact) {
  auto o = tensor(KF_I32, {1, 2, 3});
  EXPECT_TRUE(find(eval::compare_output(spec({3}, KF_I32), {}, o, o, o), "tolerance").passed);
  auto c = tensor(KF_I32, {1, 2, 4});
  EXPECT_FALSE(find(eval::compare_output(spec({3}, KF_I32), {}, c, o, o), "tolerance").passed);
}

TEST(compare, repeat_is_bitwise) {
  auto a = tensor(KF_F32, {1.0, 2.0, 3.0});
  EXPECT_TRUE(eval::compare_repeat(spec({3}), a, a).passed);
  auto b = a;
  float x = 2.0000002f;
  std::memcpy(b.bytes.data() + 4, &x, 4);
  auto r = eval::compare_repeat(spec({3}), a, b);
  EXPECT_FALSE(r.passed);
  EXPECT_EQ(r.detail["first"], "y[1]");
}

TEST(compare, reference_error_measures_float_rounding) {
  fixture f;
  auto e = eval::measure_reference_error(spec({64}), f.oracle, f.ref);
  EXPECT_GT(e.max_abs, 0.0);
  EXPECT_LT(e.max_abs, 1e-6);
  EXPECT_GT(e.rel_l2, 0.0);
}

TEST(compare, large_outputs_scan_in_parallel_and_name_the_first_worst_element) {
  // Over 2^20 elements the scan is split across threads; the reported elements must be
  // those a sequential pass finds: the first unwritten, and the earliest of equal worsts.
  const std::size_t n = (1u << 21) + 7;
  std::vector<double> truth(n);
  for (std::size_t i = 0; i < n; ++i) truth[i] = 1.0 + (i % 13) * 0.25;
  auto oracle = tensor(KF_F64, truth), ref = tensor(KF_F32, truth);
  auto v = truth;
  v[n - 5] += 1.0;          // the same error twice:
  v[n / 2 + 3] += 1.0;      // the earlier one is the worst
  auto c = tensor(KF_F32, v);
  std::memset(c.bytes.data() + 4 * (n - 2), 0xFF, 4); // unwritten, late
  std::memset(c.bytes.data() + 4 * (n / 3), 0xFF, 4); // unwritten, earlier
  auto cs = eval::compare_output(spec({static_cast<int64_t>(n)}), {}, c, oracle, ref);
  EXPECT_EQ(find(cs, "unwritten").detail["count"], 2);
  EXPECT_EQ(find(cs, "unwritten").detail["first"], "y[" + std::to_string(n / 3) + "]");
  EXPECT_EQ(find(cs, "tolerance").detail["worst"]["index"], n / 2 + 3);
  EXPECT_FALSE(find(cs, "tolerance").passed);
}

TEST(compare, an_opted_in_lower_precision_widens_the_floor_and_is_reported) {
  fixture f;
  // The candidate rounds every value to tf32 (10 explicit mantissa bits).
  auto c = f.ref;
  for (std::size_t i = 0; i < f.truth.size(); ++i) {
    float v = static_cast<float>(f.truth[i]);
    std::uint32_t u;
    std::memcpy(&u, &v, 4);
    u = (u + 0x1000u) & ~0x1FFFu;
    std::memcpy(&v, &u, 4);
    std::memcpy(c.bytes.data() + 4 * i, &v, 4);
  }
  problem::tolerance_spec nominal;
  EXPECT_FALSE(find(eval::compare_output(spec({8, 8}), nominal, c, f.oracle, f.ref), "tolerance").passed);
  problem::tolerance_spec tf32;
  tf32.precision = "tf32";
  const auto checks = eval::compare_output(spec({8, 8}), tf32, c, f.oracle, f.ref);
  const auto& t = find(checks, "tolerance");
  EXPECT_TRUE(t.passed) << t.message;
  EXPECT_EQ(t.detail["precision"], "tf32");
  // Four mantissa bits are far coarser than any opt-in.
  auto coarse = f.ref;
  for (std::size_t i = 0; i < f.truth.size(); ++i) {
    std::uint32_t u;
    std::memcpy(&u, coarse.bytes.data() + 4 * i, 4);
    u = (u + 0x40000u) & ~0x7FFFFu;
    std::memcpy(coarse.bytes.data() + 4 * i, &u, 4);
  }
  EXPECT_FALSE(find(eval::compare_output(spec({8, 8}), tf32, coarse, f.oracle, f.ref), "tolerance").passed);
}
