// kforge profile on a real GPU (label: gpu): one call under Nsight Compute, counters by
// exact name, a digest with a bottleneck class, and the SASS mix of the built binary.
#include "device/calibration.hpp"
#include "profile/digest.hpp"
#include "problem/problem.hpp"
#include "test_util.hpp"
#include "worker/profile_run.hpp"

#include <gtest/gtest.h>

using namespace kforge;

TEST(gpu_profile, the_softmax_seed_has_a_digest_and_a_sass_mix) {
  ::setenv("KFORGE_WORKER", test::worker_binary().c_str(), 1);
  const auto p = problem::load(test::source_dir() / "tests" / "gpu" / "problems" / "softmax_small");
  auto run = worker::profile_candidate(p, *p.seed, {});
  ASSERT_TRUE(run.ok()) << run.failure << "\n" << run.command << "\n" << run.log.substr(0, 2000);
  ASSERT_EQ(run.kernels.size(), 1u) << "one launch in the profiled call, none of the harness's";
  const auto d = profile::digest(run.kernels, {.dram_bytes_per_s = 4.2e12}, &run.sass);
  ASSERT_EQ(d.kernels.size(), 1u);
  EXPECT_GT(d.kernels[0].duration_s, 0.0);
  EXPECT_FALSE(d.kernels[0].bound.empty());
  EXPECT_FALSE(d.kernels[0].evidence.empty());
  const auto text = profile::to_text(d, &run.sass);
  std::cout << text << "\n";
  EXPECT_NE(text.find("softmax_rows"), std::string::npos);
  EXPECT_FALSE(run.sass.empty()) << run.sass_note;
}

TEST(gpu_profile, a_kernel_only_candidate_is_profiled_too) {
  ::setenv("KFORGE_WORKER", test::worker_binary().c_str(), 1);
  const auto p = problem::load(test::source_dir() / "tests" / "gpu" / "problems" / "softmax_small");
  auto run = worker::profile_candidate(p, test::source_dir() / "examples" / "softmax_nvrtc.cu", {});
  ASSERT_TRUE(run.ok()) << run.failure;
  ASSERT_EQ(run.kernels.size(), 1u);
  EXPECT_NE(run.kernels[0].name.find("softmax_online"), std::string::npos) << run.kernels[0].name;
}
