// The CUDA backend end to end on a real GPU (label: gpu; CI has none and skips these).
#include "build/compiler.hpp"
#include "device/backend.hpp"
#include "problem/problem.hpp"
#include "test_util.hpp"
#include "device/calibration.hpp"
#include "worker/calibrate.hpp"
#include "worker/evaluate.hpp"

#include <gtest/gtest.h>

using namespace kforge;

namespace {
problem::problem small() { return problem::load(test::source_dir() / "tests" / "gpu" / "problems" / "softmax_small"); }
} // namespace

TEST(cuda_backend, describes_the_device_and_times_with_events) {
  auto dev = device::make_backend(problem::backend_kind::cuda);
  EXPECT_EQ(dev->name(), "cuda:0");
  EXPECT_NE(dev->description().find("sm_"), std::string::npos) << dev->description();
  void* p = dev->allocate(1 << 20);
  dev->fill(p, 0xAB, 1 << 20);
  std::vector<unsigned char> back(1 << 20);
  dev->download(back.data(), p, back.size());
  EXPECT_EQ(back[12345], 0xAB);
  int rc = -1;
  const double t = dev->time_call([&] { dev->fill(p, 1, 1 << 20); return 0; }, &rc);
  EXPECT_EQ(rc, 0);
  EXPECT_GT(t, 0.0);
  dev->release(p);
}

TEST(cuda_build, nvcc_reports_resources_for_sm90a) {
  auto a = build::compile({.source = test::source_dir() / "problems" / "softmax" / "seed.cu"}, build::problem_backend::cuda);
  ASSERT_TRUE(a.ok) << a.diagnostics;
  EXPECT_NE(a.command.find("sm_90a"), std::string::npos);
  ASSERT_FALSE(a.resources.empty()) << a.diagnostics;
  EXPECT_GT(a.resources[0]["registers"].get<int>(), 0);
}

TEST(cuda_eval, reference_and_seed_pass_and_are_timed) {
  const auto p = small();
  worker::evaluate_options o;
  o.worker_exe = test::worker_binary();
  for (auto src : {p.reference, *p.seed}) {
    auto ev = worker::evaluate(p, src, o);
    EXPECT_EQ(ev.status, "passed") << src << ": " << ev.message;
    ASSERT_NE(ev.timing("candidate"), nullptr);
    EXPECT_GT(ev.timing("candidate")->median_s, 0.0);
    ASSERT_TRUE(ev.speedup().has_value());
    EXPECT_NE(ev.device.find("cuda:0"), std::string::npos);
  }
}

TEST(cuda_eval, a_sticky_fault_ends_the_worker_and_the_next_evaluation_still_works) {
  const auto p = small();
  worker::evaluate_options o;
  o.worker_exe = test::worker_binary();
  o.time = false;
  auto bad = worker::evaluate(p, test::source_dir() / "tests" / "adversarial" / "cuda" / "illegal_address.cu", o);
  EXPECT_EQ(bad.status, "device_error") << bad.message;
  auto good = worker::evaluate(p, *p.seed, o);
  EXPECT_EQ(good.status, "passed") << good.message;
}

TEST(cuda_calibrate, measures_plausible_ceilings_and_reports_the_roofline) {
  const auto desc = device::make_backend(problem::backend_kind::cuda)->description();
  auto c = device::load_ceilings(desc);
  if (!c) {
    c = worker::measure_ceilings(test::worker_binary());
    device::save_ceilings(*c);
  }
  EXPECT_GT(c->copy_bytes_per_s, 1e11);
  EXPECT_GT(c->fp32_flops, 1e12);
  EXPECT_GT(c->tf32_flops, c->fp32_flops);
  EXPECT_GT(c->bf16_flops, c->fp32_flops);
  EXPECT_GT(c->fp64_flops, 1e12);

  const auto p = small();
  worker::evaluate_options o;
  o.worker_exe = test::worker_binary();
  auto ev = worker::evaluate(p, *p.seed, o);
  ASSERT_EQ(ev.status, "passed") << ev.message;
  ASSERT_FALSE(ev.roofline.is_null());
  EXPECT_GT(ev.roofline["candidate_fraction"].get<double>(), 0.0);
  EXPECT_LE(ev.roofline["candidate_fraction"].get<double>(), 1.25);
  EXPECT_EQ(ev.roofline["bound"], "memory");

  // A kernel that stops working once it is being timed beats the physical floor (on a
  // shape whose floor is above the cost of an empty timed call).
  const auto medium = problem::load(test::source_dir() / "tests" / "gpu" / "problems" / "softmax_medium");
  auto cheat = worker::evaluate(medium, test::source_dir() / "tests" / "gpu" / "kernels" / "skips_work_when_timed.cu", o);
  EXPECT_EQ(cheat.status, "timed_output") << cheat.message;
  bool floor_caught = false;
  for (auto& c : cheat.checks) floor_caught |= c.name == "impossible_time" && !c.passed;
  EXPECT_TRUE(floor_caught) << "the physical floor should catch it too";
}

TEST(cuda_eval, a_bare_launch_on_the_legacy_default_stream_is_ordered_with_the_call_and_timed) {
  const auto p = small();
  worker::evaluate_options o;
  o.worker_exe = test::worker_binary();
  o.time_budget_s = 0.3;
  // The candidate and the softmax it includes, in one folder (the confined compiler's view).
  test::temp_dir dir;
  for (auto f : {test::source_dir() / "tests" / "gpu" / "kernels" / "softmax_legacy_stream.cu",
                 test::source_dir() / "tests" / "adversarial" / "cuda" / "softmax_common.cuh"})
    std::filesystem::copy_file(f, dir.path / f.filename());
  auto ev = worker::evaluate(p, dir.path / "softmax_legacy_stream.cu", o);
  ASSERT_EQ(ev.status, "passed") << ev.message;
  ASSERT_NE(ev.timing("candidate"), nullptr);
  // The kernel waits 2 ms on the GPU before its softmax: the timer saw it.
  EXPECT_GT(ev.timing("candidate")->median_s, 1.9e-3);
}

TEST(cuda_eval, the_cute_example_passes) {
  const auto p = small();
  worker::evaluate_options o;
  o.worker_exe = test::worker_binary();
  o.time = false;
  auto ev = worker::evaluate(p, test::source_dir() / "examples" / "softmax_cute.cu", o);
  EXPECT_EQ(ev.status, "passed") << ev.message;
}

TEST(cuda_eval, kernel_only_candidates_are_built_by_nvrtc_verified_and_timed) {
  const auto p = small();
  worker::evaluate_options o;
  o.worker_exe = test::worker_binary();
  for (auto src : {test::source_dir() / "examples" / "softmax_nvrtc.cu",
                   test::source_dir() / "tests" / "gpu" / "kernels" / "kernel_only_staged_softmax.cu"}) {
    auto ev = worker::evaluate(p, src, o);
    EXPECT_EQ(ev.status, "passed") << src << ": " << ev.message;
    bool nvrtc = false;
    for (auto& b : ev.builds) nvrtc |= b.role == "candidate" && b.artifact.toolchain == "nvrtc";
    EXPECT_TRUE(nvrtc) << src;
    ASSERT_NE(ev.timing("candidate"), nullptr) << src;
    EXPECT_GT(ev.timing("candidate")->median_s, 0.0);
  }
}
