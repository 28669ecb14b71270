// kforge eval's text: what a reader is told beside the medians.
#include "cli/format.hpp"
#include "test_util.hpp"

#include <gtest/gtest.h>

using namespace kforge;

namespace {
worker::evaluation timed(double candidate_median_s) {
  worker::evaluation ev;
  ev.timings.push_back({.subject = "candidate", .samples = 10, .median_s = candidate_median_s});
  ev.timings.push_back({.subject = "reference", .samples = 10, .median_s = 40e-6});
  ev.kernels["candidate"] = nlohmann::json::array(
      {{{"name", "softmax_rows"}, {"launches", 1.0}, {"gpu_s", 15e-6}, {"library", ""}}});
  ev.engine = {{"path", "device"}, {"host_spin_us", 0}};
  return ev;
}
} // namespace

// A Python call's cost shows as the time its median holds beyond its kernels' GPU time.
TEST(format_evaluation, says_how_much_of_a_median_is_outside_the_kernels) {
  const auto p = problem::load(test::problems_dir() / "softmax");
  const auto text = cli::format_evaluation(timed(60e-6), p, 1, "model_new.py");
  EXPECT_NE(text.find("candidate median 60"), std::string::npos) << text;
  EXPECT_NE(text.find("45.00 us more than its kernels' GPU time"), std::string::npos) << text;
  EXPECT_NE(text.find("timing workers sleep between samples"), std::string::npos) << text;
  // A median under the kernels' warm time (a cold sample that ran faster, noise): nothing said.
  EXPECT_EQ(cli::format_evaluation(timed(14e-6), p, 1, "x.cu").find("more than its kernels"), std::string::npos);
}
