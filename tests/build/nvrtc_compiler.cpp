// The NVRTC toolchain: compiles here, no GPU needed (only running the cubin needs one).
#include "build/compiler.hpp"
#include "build/launch_plan.hpp"
#include "core/fs.hpp"
#include "test_util.hpp"

#include <gtest/gtest.h>

using namespace kforge;

namespace {

const char* kernel_only = R"(// kforge: launch scale<128><<<cdiv(x.numel, 128), 128>>>(x, y, x.numel)
template <int B>
__global__ void scale(const KF_REAL* x, KF_REAL* y, long long n) {
  long long i = (long long)blockIdx.x * B + threadIdx.x;
  if (i < n) y[i] = x[i] * 2;
}
)";

#ifdef KFORGE_WITH_CUDA
constexpr bool have_cuda = true;
#else
constexpr bool have_cuda = false;
#endif

} // namespace

TEST(nvrtc_compiler, the_toolchain_is_chosen_by_the_source) {
  test::temp_dir d;
  test::write(d / "k.cu", kernel_only);
  test::write(d / "h.cu", "#include <kforge/kernel.h>\nKF_EXPORT int kf_forward(const kf_args*) { return 0; }\n");
  EXPECT_EQ(build::toolchain_for(d / "k.cu", build::problem_backend::cuda), "nvrtc");
  EXPECT_EQ(build::toolchain_for(d / "h.cu", build::problem_backend::cuda), "nvcc");
  EXPECT_EQ(build::toolchain_for(d / "h.cu", build::problem_backend::cpu), "host");
}

TEST(nvrtc_compiler, builds_a_cubin_with_its_launch_plan_and_resources_and_caches_it) {
  if (!have_cuda) GTEST_SKIP() << "kforge was built without the CUDA toolkit";
  test::cache_env env;
  test::temp_dir d;
  test::write(d / "k.cu", kernel_only);
  auto a = build::compile({.source = d / "k.cu", .real = KF_F64, .input_names = {"x"}, .output_names = {"y"}},
                          build::problem_backend::cuda);
  ASSERT_TRUE(a.ok) << a.diagnostics;
  EXPECT_EQ(a.toolchain, "nvrtc");
  EXPECT_EQ(a.library.extension(), ".cubin");
  EXPECT_NE(a.command.find("-arch=sm_90a"), std::string::npos) << a.command;
  EXPECT_NE(a.command.find("-DKF_REAL=double"), std::string::npos) << a.command;
  EXPECT_NE(a.compiler.find("NVRTC"), std::string::npos) << a.compiler;
  ASSERT_EQ(a.resources.size(), 1u) << a.diagnostics;
  EXPECT_GT(a.resources[0]["registers"].get<int>(), 0);
  auto plan = build::launch_plan::from_json(nlohmann::json::parse(read_file(build::launch_plan_path(a.library))));
  ASSERT_EQ(plan.launches.size(), 1u);
  EXPECT_EQ(plan.launches[0].kernel, "scale<128>");
  EXPECT_EQ(plan.launches[0].lowered, "_Z5scaleILi128EEvPKdPdx"); // KF_REAL=double reached the kernel
  auto again = build::compile({.source = d / "k.cu", .real = KF_F64}, build::problem_backend::cuda);
  EXPECT_TRUE(again.cached);
  EXPECT_EQ(again.library, a.library);
}

TEST(nvrtc_compiler, a_compile_error_is_a_value_with_the_compilers_message) {
  if (!have_cuda) GTEST_SKIP() << "kforge was built without the CUDA toolkit";
  test::cache_env env;
  test::temp_dir d;
  test::write(d / "k.cu", "// kforge: launch k<<<1, 32>>>(x)\n__global__ void k(float* x) { undeclared = 1; }\n");
  auto a = build::compile({.source = d / "k.cu"}, build::problem_backend::cuda);
  EXPECT_FALSE(a.ok);
  EXPECT_NE(a.diagnostics.find("undeclared"), std::string::npos) << a.diagnostics;
}

TEST(nvrtc_compiler, a_missing_kernel_and_a_bad_directive_fail_the_build) {
  if (!have_cuda) GTEST_SKIP() << "kforge was built without the CUDA toolkit";
  test::cache_env env;
  test::temp_dir d;
  test::write(d / "k.cu", "// kforge: launch missing<<<1, 32>>>(x)\n__global__ void k(float* x) {}\n");
  auto a = build::compile({.source = d / "k.cu"}, build::problem_backend::cuda);
  EXPECT_FALSE(a.ok);
  EXPECT_NE(a.diagnostics.find("missing"), std::string::npos) << a.diagnostics;
  test::write(d / "b.cu", "// kforge: launch k<<<q.shape[0], 32>>>(x)\n__global__ void k(float* x) {}\n");
  auto b = build::compile({.source = d / "b.cu", .input_names = {"x"}, .output_names = {"y"}},
                          build::problem_backend::cuda);
  EXPECT_FALSE(b.ok);
  EXPECT_NE(b.diagnostics.find("b.cu:1: kforge: launch: unknown tensor 'q'"), std::string::npos) << b.diagnostics;
}
