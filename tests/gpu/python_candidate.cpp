// Python candidates on the GPU (label: gpu): Triton and load_inline ModelNew files pass,
// their JIT is the build and is cached, and every evaluation lists the kernels a call ran
// (worker/kernel_trace.hpp), so a ModelNew that only calls PyTorch shows as library kernels.
#include "bridge/torch_helper.hpp"
#include "test_util.hpp"
#include "worker/evaluate.hpp"

#include <gtest/gtest.h>

using namespace kforge;

namespace {

problem::problem small() { return problem::load(test::source_dir() / "tests" / "gpu" / "problems" / "softmax_small"); }
std::filesystem::path data(const char* f) { return test::source_dir() / "tests" / "gpu" / "data" / f; }

worker::evaluation evaluate_small(const std::filesystem::path& src) {
  worker::evaluate_options o;
  o.worker_exe = test::worker_binary();
  o.time_budget_s = 0.3;
  return worker::evaluate(small(), src, o);
}

const build::artifact* candidate_build(const worker::evaluation& ev) {
  for (auto& b : ev.builds)
    if (b.role == "candidate") return &b.artifact;
  return nullptr;
}

// The kernel of the candidate's list whose name holds `part`, or null.
const nlohmann::json* kernel_named(const worker::evaluation& ev, const std::string& part) {
  if (!ev.kernels.contains("candidate")) return nullptr;
  for (auto& k : ev.kernels["candidate"])
    if (k["name"].get<std::string>().find(part) != std::string::npos) return &k;
  return nullptr;
}

} // namespace

#define REQUIRE_TORCH_CUDA()                                                                            \
  do {                                                                                                  \
    if (!bridge::torch_probe().cuda) GTEST_SKIP() << "no torch with CUDA here: " << bridge::torch_probe().why; \
  } while (0)

TEST(gpu_python_candidate, a_triton_model_new_passes_its_jit_is_the_cached_build_and_its_kernel_is_listed) {
  REQUIRE_TORCH_CUDA();
  auto ev = evaluate_small(data("softmax_triton.py"));
  ASSERT_TRUE(ev.passed()) << ev.message << "\n" << ev.worker_output;
  ASSERT_NE(candidate_build(ev), nullptr);
  EXPECT_EQ(candidate_build(ev)->toolchain, "python");
  std::printf("triton build: %s", candidate_build(ev)->diagnostics.substr(0, 300).c_str());
  const auto* k = kernel_named(ev, "softmax_rows");
  ASSERT_NE(k, nullptr) << ev.kernels.dump(1);
  EXPECT_EQ((*k)["library"], "") << "a Triton kernel is the candidate's own";
  EXPECT_DOUBLE_EQ((*k)["launches"].template get<double>(), 1.0);
  std::printf("kernels: %s\n", ev.kernels.dump().substr(0, 600).c_str());
  // The call worker's start is in phases.steps, step by step (the interpreter, import torch, the
  // candidate's module), so a slow evaluation says where its seconds went.
  // The call worker started with the build (worker/early_workers.hpp): its torch import began
  // before the build ended, not after it.
  bool load_listed = false;
  double build_end = -1, import_start = -1;
  for (auto& s : ev.phases["steps"]) {
    const auto name = s[0].get<std::string>();
    if (name.starts_with("verify: call worker")) std::printf("step %s: %.3f s\n", name.c_str(), s[2].get<double>());
    if (name == "verify: call worker load: import torch (kforge's host)") {
      load_listed = true;
      import_start = s[1].get<double>();
    }
    if (name == "build (every role)") build_end = s[1].get<double>() + s[2].get<double>();
  }
  EXPECT_TRUE(load_listed) << ev.phases["steps"].dump();
  EXPECT_GE(build_end, 0) << ev.phases["steps"].dump();
  if (!candidate_build(ev)->cached) EXPECT_LT(import_start, build_end) << ev.phases["steps"].dump();
  auto again = evaluate_small(data("softmax_triton.py"));
  ASSERT_TRUE(again.passed()) << again.message;
  EXPECT_TRUE(candidate_build(again)->cached);
}

TEST(gpu_python_candidate, a_load_inline_model_new_on_torchs_current_stream_passes) {
  REQUIRE_TORCH_CUDA();
  auto ev = evaluate_small(data("softmax_load_inline.py"));
  ASSERT_TRUE(ev.passed()) << ev.message << "\n" << ev.worker_output;
  EXPECT_NE(kernel_named(ev, "softmax_rows"), nullptr) << ev.kernels.dump(1);
}

TEST(gpu_python_candidate, a_model_new_that_calls_pytorch_lists_only_library_kernels) {
  REQUIRE_TORCH_CUDA();
  auto ev = evaluate_small(data("softmax_torch.py"));
  ASSERT_TRUE(ev.passed()) << ev.message;
  ASSERT_TRUE(ev.kernels.contains("candidate")) << ev.kernels.dump(1);
  ASSERT_FALSE(ev.kernels["candidate"].empty());
  for (auto& k : ev.kernels["candidate"]) EXPECT_NE(k["library"], "") << k.dump();
}

TEST(gpu_kernel_listing, a_cpp_candidates_kernels_and_the_references_are_listed) {
  const auto p = small();
  auto ev = evaluate_small(*p.seed);
  ASSERT_TRUE(ev.passed()) << ev.message;
  ASSERT_TRUE(ev.kernels.contains("candidate")) << ev.kernels.dump(1);
  ASSERT_TRUE(ev.kernels.contains("reference")) << ev.kernels.dump(1);
  ASSERT_FALSE(ev.kernels["candidate"].empty());
  EXPECT_GT(ev.kernels["candidate"][0]["gpu_s"].get<double>(), 0.0);
  EXPECT_EQ(ev.kernels["candidate"][0]["library"], "");
}
