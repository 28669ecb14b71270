// What the GPU-resident path (docs/verification.md) shares with the host path and can be
// tested without a GPU: the shared sets' layout, a tensor set over memory another process
// owns, the scan's partial records combining in any order, and the hidden case's plan.
#include "core/dtype.hpp"
#include "device/backend.hpp"
#include "eval/buffers.hpp"
#include "eval/compare.hpp"
#include "eval/inputs.hpp"
#include "scan_data.hpp"
#include "test_util.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>

using namespace kforge;

namespace {
problem::problem layernorm() { return problem::load(test::problems_dir() / "layernorm"); }
} // namespace

TEST(shared_sets, every_tensor_sits_between_its_own_guards_and_nothing_overlaps) {
  const auto p = layernorm();
  const auto l = eval::shared_set_layout(p);
  constexpr std::size_t g = eval::guarded_buffer::guard_bytes;
  ASSERT_EQ(l.inputs.size(), p.inputs().size());
  ASSERT_EQ(l.outputs.size(), p.outputs().size());
  ASSERT_EQ(l.answers.size(), p.outputs().size());
  struct span {
    std::size_t begin, end;
  };
  std::vector<span> used; // each tensor with its two guards; answer slots as they are
  for (std::size_t k = 0; k < l.inputs.size(); ++k) used.push_back({l.inputs[k] - g, l.inputs[k] + l.input_bytes[k] + g});
  for (std::size_t k = 0; k < l.outputs.size(); ++k)
    used.push_back({l.outputs[k] - g, l.outputs[k] + l.output_bytes[k] + g});
  for (std::size_t k = 0; k < l.answers.size(); ++k) used.push_back({l.answers[k], l.answers[k] + l.output_bytes[k]});
  for (auto off : l.inputs) EXPECT_EQ(off % 256, 0u);
  for (auto off : l.outputs) EXPECT_EQ(off % 256, 0u);
  std::sort(used.begin(), used.end(), [](auto& a, auto& b) { return a.begin < b.begin; });
  for (std::size_t i = 1; i < used.size(); ++i) EXPECT_LE(used[i - 1].end, used[i].begin);
  EXPECT_LE(used.back().end, l.bytes);
}

TEST(shared_sets, a_tensor_set_over_a_shared_set_points_into_it_and_copies_its_answers) {
  const auto p = layernorm();
  auto dev = device::make_backend(problem::backend_kind::cpu);
  const auto l = eval::shared_set_layout(p);
  std::vector<std::uint8_t> set(l.bytes, 0xAB); // the "shared" memory: here, plain host memory
  eval::tensor_set ts(*dev, p, set.data());
  ts.set_workspace(64, 2);
  for (std::size_t k = 0; k < l.inputs.size(); ++k) EXPECT_EQ(ts.args().inputs[k].data, set.data() + l.inputs[k]);
  for (std::size_t k = 0; k < l.outputs.size(); ++k) EXPECT_EQ(ts.args().outputs[k].data, set.data() + l.outputs[k]);
  // The workspace is this process's own; poisoning it leaves the judge's outputs alone.
  EXPECT_NE(ts.args().workspace, nullptr);
  ts.poison_workspace(0x55);
  EXPECT_EQ(set[l.outputs[0]], 0xAB);
  std::memset(ts.args().outputs[0].data, 0x12, l.output_bytes[0]);
  ts.copy_answers();
  EXPECT_EQ(set[l.answers[0]], 0x12);
  EXPECT_EQ(set[l.answers[0] + l.output_bytes[0] - 1], 0x12);
  EXPECT_TRUE(ts.check_guards().empty()) << "the set's guards are its owner's to check";
}

TEST(shared_sets, partial_scans_combine_in_any_order_to_the_sequential_scan) {
  problem::tensor_spec spec{.name = "y", .dtype = KF_F32, .shape = {1 << 14}};
  problem::tolerance_spec tol;
  const auto n = static_cast<std::size_t>(spec.numel());
  auto [o, r, c] = test::normal_outputs(n, 3, 0);
  std::mt19937_64 rng(3);
  for (std::size_t i : {std::size_t{9000}, std::size_t{300}}) { // two equal worst errors: the lower index is named
    store_from_double(o.bytes.data(), KF_F64, i, 0.5);
    store_from_double(r.bytes.data(), KF_F32, i, 0.5);
    store_from_double(c.bytes.data(), KF_F32, i, 20.5);
  }
  for (std::size_t i : {std::size_t{12000}, std::size_t{5000}}) std::memset(c.bytes.data() + i * 4, 0xFF, 4);
  store_from_double(c.bytes.data(), KF_F32, 7000, NAN);
  const auto whole = eval::scan_output(spec, tol, c, o, r);
  EXPECT_EQ(whole.worst, 300u);
  EXPECT_EQ(whole.first_poison, 5000u);
  EXPECT_EQ(whole.first_bad_class, 7000u);
  // As the GPU judge makes them: consecutive ranges, each scanned in order, combined in any order.
  const auto prm = eval::scan_params(spec, tol, KF_F32, KF_F64, KF_F32);
  std::vector<kf_scan> parts;
  for (std::size_t b = 0; b < n; b += 1000) {
    kf_scan a = kf_scan_empty();
    for (std::size_t i = b; i < std::min(n, b + 1000); ++i) {
      bool poison = true;
      for (int k = 0; k < 4; ++k) poison = poison && c.bytes[i * 4 + k] == 0xFF;
      kf_scan_element(a, prm, i, poison, load_as_double(c.bytes.data(), KF_F32, i),
                      load_as_double(o.bytes.data(), KF_F64, i), load_as_double(r.bytes.data(), KF_F32, i));
    }
    parts.push_back(a);
  }
  std::shuffle(parts.begin(), parts.end(), rng);
  kf_scan all = kf_scan_empty();
  for (auto& x : parts) kf_scan_combine(all, x);
  EXPECT_EQ(all.poisoned, whole.poisoned);
  EXPECT_EQ(all.first_poison, whole.first_poison);
  EXPECT_EQ(all.bad_class, whole.bad_class);
  EXPECT_EQ(all.first_bad_class, whole.first_bad_class);
  EXPECT_EQ(all.worst, whole.worst);
  EXPECT_EQ(all.max_ec, whole.max_ec);
  EXPECT_NEAR(all.ec2, whole.ec2, 1e-12 * whole.ec2);
  // And the verdict made from it is compare_output's.
  std::map<std::size_t, eval::element_values> values;
  for (auto i : eval::scan_elements(spec, tol, all))
    values[i] = {load_as_double(c.bytes.data(), KF_F32, i), load_as_double(o.bytes.data(), KF_F64, i),
                 load_as_double(r.bytes.data(), KF_F32, i)};
  const auto from_parts = eval::judge_scan(spec, tol, all, values);
  const auto direct = eval::compare_output(spec, tol, c, o, r);
  ASSERT_EQ(from_parts.size(), direct.size());
  for (std::size_t i = 0; i < direct.size(); ++i) {
    EXPECT_EQ(from_parts[i].name, direct[i].name);
    EXPECT_EQ(from_parts[i].passed, direct[i].passed);
    EXPECT_EQ(from_parts[i].message, direct[i].message);
  }
}

TEST(shared_sets, the_hidden_case_plan_depends_on_the_seed_alone) {
  const auto p = layernorm();
  ASSERT_GE(p.cases.size(), 2u);
  const auto a = eval::plan_hidden(p, 42), b = eval::plan_hidden(p, 42), c = eval::plan_hidden(p, 43);
  EXPECT_EQ(a.donor_seed, b.donor_seed);
  EXPECT_NE(a.donor_seed, c.donor_seed);
  EXPECT_GE(a.donor_case, 1u);
  EXPECT_LT(a.donor_case, p.cases.size());
  ASSERT_EQ(a.inputs.size(), p.inputs().size());
  for (std::size_t k = 0; k < a.inputs.size(); ++k) {
    EXPECT_EQ(a.inputs[k].rows, b.inputs[k].rows);
    for (auto r : a.inputs[k].rows) EXPECT_LT(r, a.inputs[k].count);
  }
  // The plan applied by hand to the two cases' inputs is the hidden case's inputs.
  auto base = eval::make_inputs(p, p.cases[0], 42, eval::precision::nominal);
  const auto donor = eval::make_inputs(p, p.cases[a.donor_case], a.donor_seed, eval::precision::nominal);
  for (std::size_t k = 0; k < base.size(); ++k) {
    if (a.inputs[k].rows.empty()) continue;
    const std::size_t row = base[k].bytes.size() / a.inputs[k].count;
    for (auto r : a.inputs[k].rows) std::memcpy(base[k].bytes.data() + r * row, donor[k].bytes.data() + r * row, row);
  }
  const auto hidden = eval::make_trial_inputs(p, eval::hidden_case, 42, eval::precision::nominal);
  for (std::size_t k = 0; k < base.size(); ++k) EXPECT_EQ(hidden[k].bytes, base[k].bytes);
}
