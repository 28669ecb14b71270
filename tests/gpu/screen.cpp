// Problem screening on a real GPU (label: gpu): the CUDA control kernels run against the
// small GPU softmax, and every one must be rejected for its answer.
#include "problem/problem.hpp"
#include "test_util.hpp"
#include "worker/screen.hpp"

#include <gtest/gtest.h>

using namespace kforge;

TEST(cuda_screen, softmax_small_rejects_every_control) {
  const auto p = problem::load(test::source_dir() / "tests" / "gpu" / "problems" / "softmax_small");
  worker::evaluate_options o;
  o.worker_exe = test::worker_binary();
  const auto s = worker::screen(p, o);
  EXPECT_TRUE(s.ok()) << s.summary();
  ASSERT_EQ(s.controls.size(), 5u);
  for (auto& c : s.controls) {
    EXPECT_EQ(c.verdict, worker::control_verdict::fails) << c.name << ": " << c.status << ": " << c.message;
    EXPECT_EQ(c.status, c.name == "uninitialised" ? "unwritten" : "tolerance") << c.name << ": " << c.message;
  }
}
