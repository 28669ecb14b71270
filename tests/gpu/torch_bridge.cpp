// The PyTorch bridge on a real GPU (label: gpu): a KernelBench-format file imported as a
// CUDA problem, a CUDA candidate judged against the module's float64 oracle and timed
// beside eager PyTorch and torch.compile; the bridge's timer timing a kernel library
// through the ABI (the parity check's machinery). Skips, saying why, without torch.
#include "bridge/kernelbench.hpp"
#include "bridge/torch_helper.hpp"
#include "bridge/torch_reference.hpp"
#include "problem/problem.hpp"
#include "gpu/both_paths.hpp"
#include "test_util.hpp"
#include "worker/evaluate.hpp"

#include <gtest/gtest.h>

using namespace kforge;

namespace {

struct imported_relu {
  test::temp_dir dir;
  problem::problem p;
  imported_relu() {
    auto r = bridge::import_kernelbench(test::source_dir() / "tests" / "bridge" / "data" / "kb_relu.py",
                                        {.out = dir / "relu", .backend = "cuda"});
    p = problem::load(r.dir);
  }
  // The native relu seed against the module, timed for half a second.
  worker::evaluation evaluate_candidate() const {
    worker::evaluate_options o;
    o.worker_exe = test::worker_binary();
    o.time_budget_s = 0.5;
    return worker::evaluate(p, test::source_dir() / "bench" / "kernelbench" / "candidates" / "relu.cu", o);
  }
};

} // namespace

TEST(gpu_torch_bridge, a_cuda_candidate_is_judged_by_the_module_and_timed_beside_eager_and_compile) {
  if (!bridge::torch_probe().available) GTEST_SKIP() << bridge::torch_probe().why;
  ASSERT_TRUE(bridge::torch_probe().cuda) << "torch on the GPU machine has no CUDA";
  imported_relu r;
  auto ev = r.evaluate_candidate();
  ASSERT_TRUE(ev.passed()) << ev.message;
  ASSERT_NE(ev.timing("candidate"), nullptr);
  ASSERT_NE(ev.timing("reference"), nullptr) << "eager";
  ASSERT_NE(ev.timing("torch_compile"), nullptr) << (ev.review.empty() ? "" : ev.review[0]);
  EXPECT_TRUE(ev.speedup().has_value());
  for (auto& t : ev.timings) std::printf("  %-14s median %.4g ms over %d samples\n", t.subject.c_str(), t.median_s * 1e3, t.samples);
}

TEST(gpu_torch_bridge, the_bridge_timer_times_the_candidate_library_through_the_abi) {
  if (!bridge::torch_probe().available) GTEST_SKIP() << bridge::torch_probe().why;
  imported_relu r;
  auto ev = r.evaluate_candidate();
  ASSERT_TRUE(ev.passed()) << ev.message;
  std::filesystem::path lib;
  for (auto& b : ev.builds)
    if (b.role == "candidate") lib = b.artifact.library;
  auto t = bridge::torch_time(r.p, {{"candidate", "library", lib.string()}}, {.budget_s = 0.5}, 0, 300);
  ASSERT_EQ(t.size(), 1u);
  ASSERT_EQ(t[0].error, "");
  EXPECT_GE(t[0].samples.size(), 10u);
}

// The GPU-resident path (bridge/torch_device.hpp): the module runs in the helper on memory the
// judge shares, its parameters among the inputs; nothing crosses the host.
namespace {

worker::evaluation evaluate_on(const problem::problem& p, const std::filesystem::path& candidate, bool host,
                               bool time = false) {
  worker::evaluate_options o;
  o.worker_exe = test::worker_binary();
  o.seed = 20261205;
  o.trials_per_case = 1;
  o.time = time;
  o.time_budget_s = 0.3;
  if (host) ::setenv("KFORGE_EVAL_PATH", "host", 1);
  auto ev = worker::evaluate(p, candidate, o);
  ::unsetenv("KFORGE_EVAL_PATH");
  return ev;
}

problem::problem import_kb(const test::temp_dir& dir, const std::filesystem::path& file, const std::string& name) {
  auto r = bridge::import_kernelbench(file, {.out = dir / name, .backend = "cuda"});
  return problem::load(r.dir);
}

} // namespace

TEST(gpu_torch_bridge, the_module_runs_on_the_device_path_with_its_parameters_as_inputs) {
  if (!bridge::torch_probe().available) GTEST_SKIP() << bridge::torch_probe().why;
  test::temp_dir dir;
  const auto p = import_kb(dir, test::source_dir() / "tests" / "bridge" / "data" / "kb_linear_relu.py", "linear_relu");
  const auto ev = evaluate_on(p, test::source_dir() / "tests" / "gpu" / "data" / "linear_relu.cu", false, true);
  EXPECT_EQ(ev.engine.value("path", ""), "device") << ev.engine.dump();
  ASSERT_TRUE(ev.passed()) << ev.message;
  EXPECT_FALSE(ev.reference_errors.empty());
  EXPECT_NE(ev.timing("reference"), nullptr) << "eager PyTorch, timed by the bridge";
  EXPECT_EQ(ev.phases.value("torch_inputs", ""), "device") << "eager's inputs drawn by the judge, no file";
  std::printf("  engine %s, phases %s\n", ev.engine.dump().c_str(), ev.phases.dump().c_str());
}

TEST(gpu_torch_bridge, both_paths_give_the_same_verdicts_on_a_torch_problem) {
  if (!bridge::torch_probe().available) GTEST_SKIP() << bridge::torch_probe().why;
  test::temp_dir dir;
  const auto p = import_kb(dir, test::source_dir() / "tests" / "bridge" / "data" / "kb_relu.py", "relu");
  const auto controls = test::source_dir() / "controls" / "cuda";
  for (auto c : {test::source_dir() / "bench" / "kernelbench" / "candidates" / "relu.cu", controls / "zeros.cu",
                 controls / "input_copy.cu", controls / "uninitialised.cu"}) {
    const auto dev = evaluate_on(p, c, false);
    const auto host = evaluate_on(p, c, true);
    test::expect_same_verdicts(dev, host, c.filename().string());
  }
}

TEST(gpu_torch_bridge, a_module_that_writes_to_its_input_changes_nothing_a_candidate_sees) {
  if (!bridge::torch_probe().available) GTEST_SKIP() << bridge::torch_probe().why;
  test::temp_dir dir;
  const auto p = import_kb(dir, test::source_dir() / "tests" / "gpu" / "data" / "kb_inplace_relu.py", "inplace");
  const auto ev = evaluate_on(p, test::source_dir() / "bench" / "kernelbench" / "candidates" / "relu.cu", false);
  EXPECT_EQ(ev.engine.value("path", ""), "device") << ev.engine.dump();
  EXPECT_TRUE(ev.passed()) << ev.message;
}
