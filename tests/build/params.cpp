// Tunable parameters: the directives, their errors, constraints, instantiation (line count,
// #defines, launch lines), and the enumerations the tuner draws from.
#include "build/params.hpp"
#include "build/launch_plan.hpp"
#include "core/error.hpp"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <set>

using namespace kforge;
using build::assignment;
using build::param_space;

namespace {

std::string error_of(auto&& fn) {
  try {
    fn();
  } catch (const kforge::error& e) {
    return e.what();
  }
  return "(no error)";
}

std::string parse_error(const std::string& src) {
  return error_of([&] { (void)build::parse_params(src, "cand.cu"); });
}

int lines(std::string_view s) { return static_cast<int>(std::count(s.begin(), s.end(), '\n')); }

const std::string kernel_only = R"(// A kernel-only softmax with its block size and items per thread tunable.
// kforge: param BLOCK = 256 in {64, 128, 256, 512}
// kforge: param ITEMS = 4 in [1, 8]
// kforge: param VEC = 4 in pow2[1, 8]
// kforge: constraint BLOCK * ITEMS <= 2048
// kforge: constraint BLOCK % (32 * VEC) == 0
// kforge: launch softmax<BLOCK, ITEMS><<<x.shape[0], BLOCK, BLOCK * sizeof(float)>>>(x, y, x.shape[1])
// kforge: workspace x.shape[0] * BLOCK * sizeof(KF_REAL)
template <int threads, int items>
__global__ void softmax(const float* x, float* y, long long cols) {
  float acc[ITEMS];
}
)";

} // namespace

TEST(params, parses_sets_ranges_steps_and_powers_of_two) {
  const auto s = build::parse_params(R"(
// kforge: param BLOCK = 256 in {512, 64, 256, 128, 256}
  //kforge:param ITEMS=4 in [1,8]
// kforge: param TILE = 32 in [16, 128] step 16   // multiples of 16
// kforge: param VEC = 4 in pow2[1, 8]
// kforge: param SHIFT = -2 in [-3, 1]
)",
                                       "cand.cu");
  ASSERT_EQ(s.params.size(), 5u);
  EXPECT_EQ(s.params[0].name, "BLOCK");
  EXPECT_EQ(s.params[0].values, (std::vector<std::int64_t>{64, 128, 256, 512})); // sorted, distinct
  EXPECT_EQ(s.params[0].default_value, 256);
  EXPECT_EQ(s.params[0].line, 2);
  EXPECT_EQ(s.params[1].values, (std::vector<std::int64_t>{1, 2, 3, 4, 5, 6, 7, 8}));
  EXPECT_EQ(s.params[1].domain, "[1, 8]");
  EXPECT_EQ(s.params[2].values, (std::vector<std::int64_t>{16, 32, 48, 64, 80, 96, 112, 128}));
  EXPECT_EQ(s.params[2].domain, "[16, 128] step 16");
  EXPECT_EQ(s.params[3].values, (std::vector<std::int64_t>{1, 2, 4, 8}));
  EXPECT_EQ(s.params[4].values, (std::vector<std::int64_t>{-3, -2, -1, 0, 1}));
  EXPECT_EQ(s.size(), 4u * 8 * 8 * 4 * 5);
  EXPECT_FALSE(s.empty());
  EXPECT_TRUE(build::declares_params("x\n  // kforge: param A = 1 in {1}\n"));
  EXPECT_FALSE(build::declares_params("int x; // kforge: param A = 1 in {1}\n// kforge: launch k<<<1, 1>>>()"));
}

TEST(params, a_source_without_params_is_an_empty_space_of_one_point) {
  const auto s = build::parse_params("__global__ void k() {}\n// kforge: launch k<<<1, 32>>>()\n", "k.cu");
  EXPECT_TRUE(s.empty());
  EXPECT_EQ(s.size(), 1u);
  EXPECT_EQ(build::grid(s, 10), std::vector<assignment>{assignment{}});
  EXPECT_TRUE(s.admits({}));
  EXPECT_EQ(build::instantiate("int x;\n", s, {}), "int x;\n");
  EXPECT_EQ(s.describe(), "no tunable parameters\n");
}

TEST(params, malformed_declarations_name_file_line_and_reason) {
  auto has = [](const std::string& src, const std::string& what) {
    const auto e = parse_error(src);
    EXPECT_NE(e.find(what), std::string::npos) << "error: " << e << "\nexpected: " << what;
  };
  has("\n// kforge: param BLOCK = 100 in {64, 128}", "cand.cu:2: kforge: param: the default 100 of 'BLOCK' is not one of its values {64, 128}");
  has("// kforge: param N = 1 in [8, 1]", "cand.cu:1: kforge: param: 'N' has an empty range: 8 > 1");
  has("// kforge: param N = 1 in {}", "empty set");
  has("// kforge: param N = 1 in pow2[5, 7]", "contains no power of two");
  has("// kforge: param N = 1 in [0, 100] step 0", "the step must be positive");
  has("// kforge: param N = 1 in [0, 10000000]", "more than 65536");
  has("// kforge: param N = 1 in {1}\n// kforge: param N = 2 in {2}", "cand.cu:2: kforge: param: 'N' is declared twice (first on line 1)");
  has("// kforge: param = 1 in {1}", "expected a parameter name");
  has("// kforge: param 9N = 1 in {1}", "expected a parameter name");
  has("// kforge: param N in {1, 2}", "expected '=' and a default after 'N'");
  has("// kforge: param N = big in {1, 2}", "expected an integer default");
  has("// kforge: param N = 1 {1, 2}", "expected 'in'");
  has("// kforge: param N = 1 in (1, 2)", "expected '{', '[' or 'pow2['");
  has("// kforge: param N = 1 in {1, 2", "expected ',' or '}'");
  has("// kforge: param N = 1 in {1, 2} extra", "unexpected 'extra'");
  has("// kforge: param N = 1 in {1, 99999999999999999999}", "does not fit in 64 bits");
  has("// kforge: param int = 1 in {1}", "'int' cannot be a parameter name");
  has("// kforge: param KF_REAL = 1 in {1}", "cannot be a parameter name");
  has("// kforge: param min = 1 in {1}", "cannot be a parameter name");
}

TEST(params, constraint_errors_name_the_constraint) {
  const std::string decl = "// kforge: param BLOCK = 256 in {128, 256}\n// kforge: param ITEMS = 4 in [1, 8]\n";
  auto e = parse_error(decl + "// kforge: constraint BLOK * ITEMS <= 2048");
  EXPECT_NE(e.find("cand.cu:3: kforge: constraint: "), std::string::npos) << e;
  EXPECT_NE(e.find("unknown parameter 'BLOK' (did you mean 'BLOCK'?) (declared: BLOCK, ITEMS)"), std::string::npos) << e;
  e = parse_error(decl + "// kforge: constraint BLOCK * <= 2048");
  EXPECT_NE(e.find("in 'BLOCK * <= 2048' at column"), std::string::npos) << e;
  e = parse_error(decl + "// kforge: constraint (BLOCK < 512");
  EXPECT_NE(e.find("expected ')'"), std::string::npos) << e;
  e = parse_error(decl + "// kforge: constraint BLOCK & 31 == 0");
  EXPECT_NE(e.find("bitwise operators are not supported"), std::string::npos) << e;
  e = parse_error(decl + "// kforge: constraint");
  EXPECT_NE(e.find("empty constraint"), std::string::npos) << e;
  // The defaults must satisfy every constraint; the message names it and the values.
  e = parse_error(decl + "// kforge: constraint BLOCK * ITEMS <= 512");
  EXPECT_NE(e.find("cand.cu:3: kforge: constraint: the defaults (BLOCK=256 ITEMS=4) violate 'BLOCK * ITEMS <= 512'"),
            std::string::npos)
      << e;
}

TEST(params, constraints_are_c_expressions_that_short_circuit) {
  const std::vector<std::string> names = {"A", "B"};
  auto holds = [&](const std::string& text, std::int64_t a, std::int64_t b) {
    return build::constraint::parse(text, names).holds({{"A", a}, {"B", b}});
  };
  EXPECT_TRUE(holds("A * B <= 2048", 256, 8));
  EXPECT_FALSE(holds("A * B <= 2048", 512, 8));
  EXPECT_TRUE(holds("1 + 2 * 3 == 7 && (1 + 2) * 3 == 9", 0, 0));
  EXPECT_TRUE(holds("A % (32 * B) == 0", 256, 4));
  EXPECT_FALSE(holds("A % (32 * B) == 0", 64, 4));
  EXPECT_TRUE(holds("A < B || A >= 100", 1, 2));
  EXPECT_TRUE(holds("!(A > B) && A != B", 1, 2));
  EXPECT_TRUE(holds("-A == 0 - A && +A == A", 5, 0));
  EXPECT_TRUE(holds("A - B - 1 == 0", 3, 2)); // left-associative
  EXPECT_TRUE(holds("A / B * B == A", 12, 4));
  EXPECT_TRUE(holds("-7 / 2 == -3 && -7 % 2 == -1", 0, 0)); // C truncation
  EXPECT_TRUE(holds("min(A, B) == 2 && max(A, B) == 9", 9, 2));
  EXPECT_TRUE(holds("256u == 256", 0, 0));
  EXPECT_TRUE(holds("A", 1, 0));   // a value is true when it is not zero
  EXPECT_FALSE(holds("A", 0, 0));
  EXPECT_TRUE(holds("1 < 2 == 1", 0, 0)); // relational binds tighter than equality
  // Division by zero or overflow makes the constraint false, unless short-circuited away.
  EXPECT_FALSE(holds("A / B > 0", 4, 0));
  EXPECT_FALSE(holds("A % B == 0", 4, 0));
  EXPECT_FALSE(holds("!(A / B > 0)", 4, 0));
  EXPECT_TRUE(holds("B == 0 || A / B > 1", 4, 0));
  EXPECT_FALSE(holds("B != 0 && A / B > 1", 4, 0));
  EXPECT_FALSE(holds("A * A > 0", 4'000'000'000'000, 0));
  const auto c = build::constraint::parse("B * A + B <= 3", names, 7);
  EXPECT_EQ(c.names(), (std::vector<std::string>{"A", "B"}));
  EXPECT_EQ(c.line(), 7);
  EXPECT_EQ(c.text(), "B * A + B <= 3");
}

TEST(params, constraints_may_name_params_declared_below_them) {
  const auto s = build::parse_params("// kforge: constraint A < B\n// kforge: param A = 1 in [1, 3]\n"
                                       "// kforge: param B = 2 in [1, 3]\n",
                                       "c.cpp");
  EXPECT_EQ(build::grid(s, 100).size(), 3u); // (1,2) (1,3) (2,3)
}

TEST(params, admits_checks_names_values_and_constraints_and_says_why_not) {
  const auto s = build::parse_params(kernel_only, "softmax.cu");
  const auto d = build::defaults(s);
  EXPECT_EQ(d, (assignment{{"BLOCK", 256}, {"ITEMS", 4}, {"VEC", 4}}));
  EXPECT_TRUE(s.admits(d));
  EXPECT_EQ(s.rejection(d), "");
  auto with = [&](const std::string& n, std::int64_t v) {
    auto a = d;
    a[n] = v;
    return a;
  };
  EXPECT_EQ(s.rejection(with("BLOCK", 100)), "BLOCK=100 is not one of {64, 128, 256, 512}");
  EXPECT_EQ(s.rejection(with("ITEMS", 9)), "ITEMS=9 is not one of [1, 8]");
  EXPECT_EQ(s.rejection(with("TILE", 1)), "TILE is not a parameter (declared: BLOCK, ITEMS, VEC)");
  EXPECT_EQ(s.rejection({{"BLOCK", 256}}), "ITEMS is not set");
  EXPECT_EQ(s.rejection({{"BLOCK", 512}, {"ITEMS", 8}, {"VEC", 4}}), "BLOCK=512 ITEMS=8 violates constraint 'BLOCK * ITEMS <= 2048' (line 5)");
  EXPECT_EQ(s.rejection(with("BLOCK", 64)), "BLOCK=64 VEC=4 violates constraint 'BLOCK % (32 * VEC) == 0' (line 6)");
  const auto text = s.describe();
  EXPECT_NE(text.find("param BLOCK in {64, 128, 256, 512}, default 256 (4 values, line 2)"), std::string::npos) << text;
  EXPECT_NE(text.find("param VEC in pow2[1, 8], default 4"), std::string::npos) << text;
  EXPECT_NE(text.find("constraint BLOCK * ITEMS <= 2048 (line 5)"), std::string::npos) << text;
  EXPECT_NE(text.find("128 combinations before constraints"), std::string::npos) << text;
}

TEST(params, instantiate_defines_params_comments_constraints_and_fills_launch_lines) {
  const auto s = build::parse_params(kernel_only, "softmax.cu");
  const auto out = build::instantiate(kernel_only, s, {{"BLOCK", 128}, {"ITEMS", 2}, {"VEC", 2}});
  EXPECT_EQ(lines(out), lines(kernel_only));
  EXPECT_NE(out.find("\n#define BLOCK 128  // kforge: tuned BLOCK in {64, 128, 256, 512}\n"), std::string::npos) << out;
  EXPECT_NE(out.find("\n#define ITEMS 2  // kforge: tuned ITEMS in [1, 8]\n"), std::string::npos) << out;
  EXPECT_NE(out.find("\n#define VEC 2  // kforge: tuned VEC in pow2[1, 8]\n"), std::string::npos) << out;
  EXPECT_NE(out.find("\n// kforge-constraint: BLOCK * ITEMS <= 2048\n"), std::string::npos) << out;
  EXPECT_NE(out.find("// kforge: launch softmax<128, 2><<<x.shape[0], 128, 128 * sizeof(float)>>>(x, y, x.shape[1])"),
            std::string::npos)
      << out;
  EXPECT_NE(out.find("// kforge: workspace x.shape[0] * 128 * sizeof(KF_REAL)\n"), std::string::npos) << out;
  EXPECT_NE(out.find("  float acc[ITEMS];"), std::string::npos) << out; // code keeps its names: the #define applies
  // The result is a plain kernel-only candidate: no params, and the launch parser reads it.
  EXPECT_FALSE(build::declares_params(out));
  EXPECT_TRUE(build::parse_params(out, "softmax.cu").empty());
  const auto plan = build::parse_launch_plan(out, "softmax.cu", KF_F32);
  ASSERT_EQ(plan.launches.size(), 1u);
  EXPECT_EQ(plan.launches[0].kernel, "softmax<128, 2>");
  EXPECT_EQ(plan.launches[0].line, 7);
  // Instantiating again changes nothing.
  EXPECT_EQ(build::instantiate(out, build::parse_params(out, "softmax.cu"), {}), out);
}

TEST(params, instantiate_is_stable_and_keeps_crlf_and_indentation) {
  const std::string src = "  // kforge: param N = 2 in {1, 2}\r\n// kforge: launch k<N><<<N, NN>>>(x.N, N)\r\nint NN;\r\n";
  const auto s = build::parse_params(src, "k.cu");
  const auto a = build::instantiate(src, s, {{"N", 1}});
  EXPECT_EQ(a, "  #define N 1  // kforge: tuned N in {1, 2}\r\n// kforge: launch k<1><<<1, NN>>>(x.N, 1)\r\nint NN;\r\n");
  EXPECT_EQ(build::instantiate(src, s, {{"N", 1}}), a);
  // A different default with the same chosen value gives the same source (same hash).
  const std::string other = "  // kforge: param N = 1 in {1, 2}\r\n// kforge: launch k<N><<<N, NN>>>(x.N, N)\r\nint NN;\r\n";
  EXPECT_EQ(build::instantiate(other, build::parse_params(other, "k.cu"), {{"N", 1}}), a);
  // Negative values are parenthesised, so "x - N" stays an expression.
  const std::string neg = "// kforge: param OFF = -4 in [-4, 4]\n// kforge: workspace 64 - OFF\n";
  EXPECT_EQ(build::instantiate(neg, build::parse_params(neg, "k.cu"), {{"OFF", -4}}),
            "#define OFF (-4)  // kforge: tuned OFF in [-4, 4]\n// kforge: workspace 64 - (-4)\n");
}

TEST(params, instantiate_refuses_an_assignment_the_space_does_not_admit) {
  const auto s = build::parse_params(kernel_only, "softmax.cu");
  auto e = error_of([&] { (void)build::instantiate(kernel_only, s, {{"BLOCK", 512}, {"ITEMS", 8}, {"VEC", 4}}); });
  EXPECT_NE(e.find("cannot instantiate the candidate with BLOCK=512 ITEMS=8 VEC=4: BLOCK=512 ITEMS=8 violates "
                   "constraint 'BLOCK * ITEMS <= 2048'"),
            std::string::npos)
      << e;
  e = error_of([&] { (void)build::instantiate("int x;\n", s, build::defaults(s)); });
  EXPECT_NE(e.find("parameter 'BLOCK' (line 2) is not declared in this source"), std::string::npos) << e;
}

TEST(params, every_grid_point_is_admitted_distinct_and_in_declaration_order) {
  const auto s = build::parse_params(kernel_only, "softmax.cu");
  const auto all = build::grid(s, 100000);
  // Brute force over the cartesian product: the same set, in the same order.
  std::vector<assignment> brute;
  for (auto b : s.params[0].values)
    for (auto i : s.params[1].values)
      for (auto v : s.params[2].values) {
        assignment a{{"BLOCK", b}, {"ITEMS", i}, {"VEC", v}};
        if (s.admits(a)) brute.push_back(a);
      }
  EXPECT_EQ(all, brute);
  EXPECT_FALSE(all.empty());
  std::set<std::string> keys;
  for (const auto& a : all) {
    EXPECT_TRUE(s.admits(a)) << build::to_string(a);
    keys.insert(build::key(a));
    // Property: every admissible point instantiates to a source that declares nothing.
    const auto src = build::instantiate(kernel_only, s, a);
    EXPECT_FALSE(build::declares_params(src));
    EXPECT_EQ(lines(src), lines(kernel_only));
  }
  EXPECT_EQ(keys.size(), all.size());
  EXPECT_EQ(all.front(), (assignment{{"BLOCK", 64}, {"ITEMS", 1}, {"VEC", 1}}));
  const auto first3 = build::grid(s, 3);
  EXPECT_EQ(first3, std::vector<assignment>(all.begin(), all.begin() + 3));
  EXPECT_TRUE(build::grid(s, 0).empty());
}

TEST(params, grid_prunes_a_huge_space_by_its_prefix) {
  // 65536^4 points; the first constraint fixes A and B at once, so the walk is short.
  const auto s = build::parse_params("// kforge: param A = 0 in [0, 65535]\n// kforge: param B = 0 in [0, 65535]\n"
                                       "// kforge: param C = 0 in [0, 65535]\n// kforge: param D = 0 in [0, 65535]\n"
                                       "// kforge: constraint A == 0 && B == 0\n// kforge: constraint C < 2\n",
                                       "k.cu");
  EXPECT_EQ(s.size(), std::numeric_limits<std::uint64_t>::max()); // saturated
  const auto g = build::grid(s, 5);
  ASSERT_EQ(g.size(), 5u);
  EXPECT_EQ(g[4], (assignment{{"A", 0}, {"B", 0}, {"C", 0}, {"D", 4}}));
  EXPECT_NE(s.describe().find("more than 2^64 combinations"), std::string::npos);
}

TEST(params, sample_draws_distinct_admissible_points_and_stops_when_there_are_no_more) {
  const auto s = build::parse_params(kernel_only, "softmax.cu");
  const auto admissible = build::grid(s, 100000).size();
  std::mt19937_64 rng(42);
  const auto few = build::sample(s, 5, rng);
  ASSERT_EQ(few.size(), 5u);
  std::set<std::string> keys;
  for (const auto& a : few) {
    EXPECT_TRUE(s.admits(a));
    keys.insert(build::key(a));
  }
  EXPECT_EQ(keys.size(), 5u);
  // Asking for more than there are gives all of them, once each.
  const auto all = build::sample(s, 100000, rng);
  EXPECT_EQ(all.size(), admissible);
  keys.clear();
  for (const auto& a : all) keys.insert(build::key(a));
  EXPECT_EQ(keys.size(), admissible);
  // Deterministic for a seed.
  std::mt19937_64 r1(7), r2(7);
  EXPECT_EQ(build::sample(s, 4, r1), build::sample(s, 4, r2));
  EXPECT_TRUE(build::sample(s, 0, rng).empty());
}

TEST(params, sample_is_roughly_uniform_over_admissible_points) {
  const auto s = build::parse_params("// kforge: param A = 0 in [0, 9]\n// kforge: constraint A % 2 == 0\n", "k.cu");
  std::mt19937_64 rng(1);
  std::map<std::int64_t, int> counts;
  for (int i = 0; i < 5000; ++i) ++counts[build::sample(s, 1, rng).at(0).at("A")];
  ASSERT_EQ(counts.size(), 5u);
  for (const auto& [v, n] : counts) {
    EXPECT_EQ(v % 2, 0);
    EXPECT_NEAR(n, 1000, 150) << "A=" << v;
  }
}

TEST(params, sample_terminates_when_constraints_reject_almost_all_of_a_large_space) {
  // 2^20 points (too many to enumerate for sampling), exactly one admissible.
  const auto s = build::parse_params("// kforge: param A = 7 in [0, 1023]\n// kforge: param B = 9 in [0, 1023]\n"
                                       "// kforge: constraint A == 7 && B == 9\n",
                                       "k.cu");
  std::mt19937_64 rng(3);
  const auto got = build::sample(s, 10, rng);
  EXPECT_LE(got.size(), 1u); // rejection sampling with bounded draws: usually finds none
  for (const auto& a : got) EXPECT_TRUE(s.admits(a));
  // A large space with loose constraints fills the request.
  const auto loose = build::parse_params("// kforge: param A = 0 in [0, 1023]\n// kforge: param B = 0 in [0, 1023]\n"
                                           "// kforge: constraint A <= B\n",
                                           "k.cu");
  const auto many = build::sample(loose, 50, rng);
  EXPECT_EQ(many.size(), 50u);
  for (const auto& a : many) EXPECT_TRUE(loose.admits(a));
}

TEST(params, neighbours_move_one_param_one_step_and_stay_admissible) {
  const auto s = build::parse_params(kernel_only, "softmax.cu");
  const auto n = build::neighbours(s, build::defaults(s)); // BLOCK=256 ITEMS=4 VEC=4
  std::vector<std::string> got;
  for (const auto& a : n) got.push_back(build::to_string(a));
  EXPECT_EQ(got, (std::vector<std::string>{"BLOCK=128 ITEMS=4 VEC=4", "BLOCK=512 ITEMS=4 VEC=4", "BLOCK=256 ITEMS=3 VEC=4",
                                           "BLOCK=256 ITEMS=5 VEC=4", "BLOCK=256 ITEMS=4 VEC=2", "BLOCK=256 ITEMS=4 VEC=8"}));
  // From BLOCK=512, ITEMS=5 is over the 2048 budget, and BLOCK=128 VEC=8 breaks the divisibility.
  const auto tight = build::neighbours(s, {{"BLOCK", 512}, {"ITEMS", 4}, {"VEC", 4}});
  for (const auto& a : tight) EXPECT_NE(build::to_string(a), "BLOCK=512 ITEMS=5 VEC=4");
  EXPECT_EQ(tight.size(), 4u); // BLOCK=256, ITEMS=3, VEC=2, VEC=8
  for (const auto& a : n) {
    EXPECT_TRUE(s.admits(a));
    int changed = 0;
    for (const auto& [k, v] : a) changed += v != build::defaults(s).at(k);
    EXPECT_EQ(changed, 1);
  }
  // At the ends of a value list there is only one direction.
  const auto edge = build::neighbours(s, {{"BLOCK", 64}, {"ITEMS", 1}, {"VEC", 1}});
  for (const auto& a : edge) EXPECT_TRUE(a.at("BLOCK") >= 64 && a.at("ITEMS") >= 1 && a.at("VEC") >= 1);
  EXPECT_NE(error_of([&] { (void)build::neighbours(s, {{"BLOCK", 100}, {"ITEMS", 1}, {"VEC", 1}}); })
                .find("BLOCK=100 is not one of {64, 128, 256, 512}"),
            std::string::npos);
}

TEST(params, to_string_and_key_are_canonical) {
  const assignment a{{"ITEMS", 4}, {"BLOCK", 128}};
  EXPECT_EQ(build::to_string(a), "BLOCK=128 ITEMS=4");
  EXPECT_EQ(build::key(a), "BLOCK=128,ITEMS=4");
  EXPECT_EQ(build::key({}), "");
  EXPECT_EQ(build::to_string({{"N", -1}}), "N=-1");
}

TEST(params_python, hash_directives_become_module_assignments_and_keep_the_line_count) {
  const std::string src = "import triton\n"
                          "# kforge: param BLOCK = 1024 in {256, 1024}  # per program\n"
                          "# kforge: param WARPS = 4 in pow2[4, 8]\n"
                          "# kforge: constraint BLOCK / WARPS >= 64\n"
                          "class ModelNew: pass\n";
  ASSERT_TRUE(build::declares_params(src));
  const auto space = build::parse_params(src, "cand.py");
  ASSERT_EQ(space.params.size(), 2u);
  EXPECT_EQ(space.params[0].name, "BLOCK");
  EXPECT_EQ(space.params[0].default_value, 1024);
  const auto out = build::instantiate(src, space, {{"BLOCK", 256}, {"WARPS", 4}});
  EXPECT_EQ(out, "import triton\n"
                 "BLOCK = 256  # kforge: tuned BLOCK in {256, 1024}\n"
                 "WARPS = 4  # kforge: tuned WARPS in pow2[4, 8]\n"
                 "# kforge-constraint: BLOCK / WARPS >= 64\n"
                 "class ModelNew: pass\n");
  EXPECT_FALSE(build::declares_params(out)); // instantiating again changes nothing
  EXPECT_EQ(build::grid(space, 10).size(), 3u); // 256/8 = 32 < 64 is pruned
}

TEST(params_python, python_words_cannot_be_parameters) {
  for (const char* word : {"lambda", "torch", "tl", "self", "None"})
    EXPECT_NE(error_of([&] { (void)build::parse_params(fmt::format("# kforge: param {} = 1 in {{1, 2}}\n", word), "c.py"); })
                  .find("cannot be a parameter name"),
              std::string::npos)
        << word;
  // Other comments and preprocessor lines are not directives.
  EXPECT_FALSE(build::declares_params("#include <x.h>\n# a comment: kforge: param X = 1 in {1}\n#define K 1\n"));
}
