// Launch directives of kernel-only candidates: parsing, expressions, errors that name the
// line, CUDA's limits, and the JSON the worker reads back.
#include "build/launch_plan.hpp"
#include "core/error.hpp"

#include <gtest/gtest.h>

#include <array>

using namespace kforge;
using build::launch_plan;
using build::shape_expr;

namespace {

// A (4, 6) input x, a (4, 6) output y, and 64 bytes of workspace.
struct args_fixture {
  std::array<char, 64> ws{};
  float xbuf[24]{}, ybuf[24]{};
  kf_tensor x{xbuf, KF_F32, 2, {4, 6}, {6, 1}};
  kf_tensor y{ybuf, KF_F32, 2, {4, 6}, {6, 1}};
  kf_args a{&x, 1, &y, 1, nullptr, ws.data(), ws.size()};
};

std::int64_t eval(const std::string& text, kf_dtype real = KF_F32) {
  args_fixture f;
  auto e = shape_expr::parse(text, real);
  e.bind({"x"}, {"y"});
  return e.evaluate(f.a);
}

std::string error_of(auto&& fn) {
  try {
    fn();
  } catch (const kforge::error& e) {
    return e.what();
  }
  return "(no error)";
}

} // namespace

TEST(shape_expr, arithmetic_with_precedence_and_c_suffixes) {
  EXPECT_EQ(eval("1 + 2 * 3"), 7);
  EXPECT_EQ(eval("(1 + 2) * 3"), 9);
  EXPECT_EQ(eval("-7 / 2"), -3);
  EXPECT_EQ(eval("7 % 4 - -1"), 4);
  EXPECT_EQ(eval("256u * 2ll"), 512);
  EXPECT_EQ(eval("min(3, 9) + max(3, 9)"), 12);
  EXPECT_EQ(eval("cdiv(10, 4)"), 3);
  EXPECT_EQ(eval("cdiv(8, 4)"), 2);
}

TEST(shape_expr, reads_shapes_strides_numel_and_ndim) {
  EXPECT_EQ(eval("x.shape[0]"), 4);
  EXPECT_EQ(eval("x.shape[-1]"), 6);
  EXPECT_EQ(eval("y.stride[0]"), 6);
  EXPECT_EQ(eval("x.numel"), 24);
  EXPECT_EQ(eval("x.ndim"), 2);
  EXPECT_EQ(eval("cdiv(y.numel, 256)"), 1);
}

TEST(shape_expr, sizeof_follows_the_builds_real_type) {
  EXPECT_EQ(eval("sizeof(float) + sizeof(long long) + sizeof(half)"), 14);
  EXPECT_EQ(eval("sizeof(KF_REAL)", KF_F32), 4);
  EXPECT_EQ(eval("sizeof(KF_REAL)", KF_F64), 8);
  EXPECT_NE(error_of([] { (void)eval("sizeof(quaternion)"); }).find("unknown type"), std::string::npos);
}

TEST(shape_expr, mistakes_name_the_expression_and_column) {
  auto msg = error_of([] { (void)shape_expr::parse("x.shape[0] +", KF_F32); });
  EXPECT_NE(msg.find("'x.shape[0] +'"), std::string::npos) << msg;
  EXPECT_NE(msg.find("column"), std::string::npos) << msg;
  msg = error_of([] { (void)shape_expr::parse("rows * 2", KF_F32); });
  EXPECT_NE(msg.find("'rows' alone is not a number"), std::string::npos) << msg;
  msg = error_of([] { (void)shape_expr::parse("x.size", KF_F32); });
  EXPECT_NE(msg.find("shape[d], stride[d], numel and ndim"), std::string::npos) << msg;
  msg = error_of([] { (void)shape_expr::parse("(1 + 2", KF_F32); });
  EXPECT_NE(msg.find("expected ')'"), std::string::npos) << msg;
}

TEST(shape_expr, run_time_failures_are_errors_not_garbage) {
  EXPECT_NE(error_of([] { (void)eval("x.numel / (x.shape[0] - 4)"); }).find("divides by zero"), std::string::npos);
  EXPECT_NE(error_of([] { (void)eval("x.shape[2]"); }).find("has 2 dimensions"), std::string::npos);
  EXPECT_NE(error_of([] { (void)eval("9223372036854775807 + 1"); }).find("overflows"), std::string::npos);
}

TEST(launch_plan, parses_launches_in_order_with_dim3_templates_and_workspace) {
  const std::string src = R"(// a kernel-only candidate
// kforge: launch reduce<256><<<dim3(x.shape[0], 2), 256, 256 * sizeof(float)>>>(x, workspace, x.shape[1])
//   kforge:   launch finish<<<cdiv(y.numel, 128), dim3(32, 4)>>>(workspace, y, y.numel)
// kforge: workspace x.shape[0] * 2 * sizeof(KF_REAL)
__global__ void finish() {}
)";
  EXPECT_TRUE(build::declares_launches(src));
  auto plan = build::parse_launch_plan(src, "k.cu", KF_F32);
  ASSERT_EQ(plan.launches.size(), 2u);
  EXPECT_EQ(plan.launches[0].kernel, "reduce<256>");
  EXPECT_EQ(plan.launches[0].line, 2);
  EXPECT_EQ(plan.launches[1].kernel, "finish");
  EXPECT_EQ(plan.launches[1].line, 3);
  plan.bind({"x"}, {"y"});
  args_fixture f;
  auto calls = plan.evaluate(f.a);
  ASSERT_EQ(calls.size(), 2u);
  EXPECT_EQ(calls[0].grid, (std::array<std::int64_t, 3>{4, 2, 1}));
  EXPECT_EQ(calls[0].block, (std::array<std::int64_t, 3>{256, 1, 1}));
  EXPECT_EQ(calls[0].smem, 1024);
  ASSERT_EQ(calls[0].params.size(), 3u);
  EXPECT_EQ(calls[0].params[0], reinterpret_cast<std::uintptr_t>(f.xbuf));
  EXPECT_EQ(calls[0].params[1], reinterpret_cast<std::uintptr_t>(f.ws.data()));
  EXPECT_EQ(calls[0].params[2], 6u);
  EXPECT_EQ(calls[1].grid[0], 1);
  EXPECT_EQ(calls[1].block, (std::array<std::int64_t, 3>{32, 4, 1}));
  EXPECT_EQ(calls[1].params[1], reinterpret_cast<std::uintptr_t>(f.ybuf));
  EXPECT_EQ(plan.workspace_bytes(f.a), 32u);
}

TEST(launch_plan, survives_a_json_round_trip) {
  auto plan = build::parse_launch_plan("// kforge: launch k<<<x.shape[0], 128, 64>>>(x, y, x.numel)\n"
                                       "// kforge: workspace 16\n",
                                       "k.cu", KF_F64);
  plan.launches[0].lowered = "_Z1kPKdPdx";
  auto back = launch_plan::from_json(nlohmann::json::parse(plan.to_json().dump()));
  EXPECT_EQ(back.file, "k.cu");
  EXPECT_EQ(back.real, KF_F64);
  ASSERT_EQ(back.launches.size(), 1u);
  EXPECT_EQ(back.launches[0].lowered, "_Z1kPKdPdx");
  EXPECT_EQ(back.launches[0].smem.text(), "64");
  EXPECT_TRUE(back.has_workspace);
  back.bind({"x"}, {"y"});
  args_fixture f;
  auto calls = back.evaluate(f.a);
  EXPECT_EQ(calls[0].grid[0], 4);
  EXPECT_EQ(calls[0].params[2], 24u);
}

TEST(launch_plan, malformed_directives_name_file_and_line) {
  auto err = [](const std::string& src) {
    return error_of([&] { (void)build::parse_launch_plan(src, "cand.cu", KF_F32); });
  };
  EXPECT_NE(err("\n// kforge: launch k(x, y)\n").find("cand.cu:2: kforge: launch: expected KERNEL<<<"), std::string::npos);
  EXPECT_NE(err("// kforge: launch k<<<1>>>(x)").find("give grid and block"), std::string::npos);
  EXPECT_NE(err("// kforge: launch k<<<1, 2, 0, stream>>>(x)").find("the stream is kforge's"), std::string::npos);
  EXPECT_NE(err("// kforge: launch k<<<1, 32>>> x, y").find("arguments in parentheses"), std::string::npos);
  EXPECT_NE(err("// kforge: launch <<<1, 32>>>(x)").find("no kernel name"), std::string::npos);
  EXPECT_NE(err("// kforge: launch k<<<1, 32>>>(x.shape[)").find("cand.cu:1:"), std::string::npos);
  EXPECT_NE(err("// kforge: lunch k<<<1, 32>>>(x)").find("unknown directive"), std::string::npos);
  EXPECT_NE(err("// kforge: workspace 4\n").find("needs at least one"), std::string::npos);
  EXPECT_FALSE(build::declares_launches("__global__ void k() {} // not a directive: kforge: launch"));
}

TEST(launch_plan, unknown_tensors_are_named_with_a_hint) {
  auto plan = build::parse_launch_plan("// kforge: launch k<<<xx.shape[0], 32>>>(x, y)", "cand.cu", KF_F32);
  const auto msg = error_of([&] { plan.bind({"x"}, {"y"}); });
  EXPECT_NE(msg.find("cand.cu:1:"), std::string::npos) << msg;
  EXPECT_NE(msg.find("unknown tensor 'xx' (did you mean 'x'?)"), std::string::npos) << msg;
  auto arg = build::parse_launch_plan("// kforge: launch k<<<1, 32>>>(x, out)", "cand.cu", KF_F32);
  EXPECT_NE(error_of([&] { arg.bind({"x"}, {"y"}); }).find("unknown tensor 'out'"), std::string::npos);
}

TEST(launch_plan, geometry_outside_cudas_limits_is_refused_with_its_expression) {
  args_fixture f;
  auto run = [&](const std::string& directive) {
    auto plan = build::parse_launch_plan(directive, "cand.cu", KF_F32);
    plan.bind({"x"}, {"y"});
    return error_of([&] { (void)plan.evaluate(f.a); });
  };
  EXPECT_NE(run("// kforge: launch k<<<x.shape[0] - 4, 32>>>(x)").find("grid.x = 0 (from 'x.shape[0] - 4')"),
            std::string::npos);
  EXPECT_NE(run("// kforge: launch k<<<1, 2048>>>(x)").find("block.x = 2048"), std::string::npos);
  EXPECT_NE(run("// kforge: launch k<<<1, dim3(64, 32)>>>(x)").find("2048 threads per block"), std::string::npos);
  EXPECT_NE(run("// kforge: launch k<<<dim3(1, 70000), 32>>>(x)").find("grid.y = 70000"), std::string::npos);
  EXPECT_NE(run("// kforge: launch k<<<1, 32, -4>>>(x)").find("shared memory -4"), std::string::npos);
  EXPECT_EQ(run("// kforge: launch k<<<1, 32>>>(x)"), "(no error)");
}

TEST(launch_plan, leaves_tunable_parameter_directives_to_the_proposer) {
  // Instantiated sources have no param lines, but a kernel-only file read as written does.
  const std::string src = "// kforge: param BLOCK = 256 in {128, 256}\n"
                          "// kforge: constraint BLOCK % 32 == 0\n"
                          "// kforge: launch k<<<x.shape[0], 256>>>(x, y)\n";
  auto plan = build::parse_launch_plan(src, "k.cu", KF_F32);
  ASSERT_EQ(plan.launches.size(), 1u);
  EXPECT_EQ(plan.launches[0].line, 3);
  EXPECT_NE(error_of([] { (void)build::parse_launch_plan("// kforge: parm X = 1 in {1}\n// kforge: launch k<<<1, 32>>>(x)",
                                                         "k.cu", KF_F32); })
                .find("k.cu:1: kforge: parm: unknown directive"),
            std::string::npos);
}

TEST(launch_plan, reads_directives_of_a_file_with_crlf_line_endings) {
  auto plan = build::parse_launch_plan("// kforge: launch k<<<1, 32>>>(x, y)\r\n// kforge: workspace 8\r\n__global__ void k() {}\r\n",
                                       "k.cu", KF_F32);
  ASSERT_EQ(plan.launches.size(), 1u);
  EXPECT_EQ(plan.launches[0].args.size(), 2u);
  EXPECT_TRUE(plan.has_workspace);
}
