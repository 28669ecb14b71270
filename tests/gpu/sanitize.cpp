// kforge eval --sanitize on a real GPU (label: gpu): compute-sanitizer finds what the
// byte-level checks cannot. Needs compute-sanitizer beside nvcc, on PATH, or in
// $KFORGE_COMPUTE_SANITIZER.
#include "problem/problem.hpp"
#include "test_util.hpp"
#include "worker/evaluate.hpp"
#include "worker/sanitize.hpp"

#include <gtest/gtest.h>

using namespace kforge;

namespace {
problem::problem small() { return problem::load(test::source_dir() / "tests" / "gpu" / "problems" / "softmax_small"); }
std::filesystem::path kernel(const char* name) { return test::source_dir() / "tests" / "gpu" / "kernels" / name; }

worker::evaluation eval_sanitized(const std::filesystem::path& src, bool sanitize = true) {
  worker::evaluate_options o;
  o.worker_exe = test::worker_binary();
  o.time = false;
  o.sanitize = sanitize;
  return worker::evaluate(small(), src, o);
}

const eval::check_result* find(const worker::evaluation& ev, const std::string& name) {
  for (auto& c : ev.checks)
    if (c.name == name) return &c;
  return nullptr;
}
} // namespace

TEST(cuda_sanitize, the_seed_is_clean_under_all_four_tools) {
  ASSERT_FALSE(worker::find_compute_sanitizer().empty()) << "compute-sanitizer not found";
  auto ev = eval_sanitized(*small().seed);
  EXPECT_EQ(ev.status, "passed") << ev.message;
  for (auto* tool : {"memcheck", "racecheck", "initcheck", "synccheck"}) {
    auto* c = find(ev, std::string("sanitize_") + tool);
    ASSERT_NE(c, nullptr) << tool;
    EXPECT_TRUE(c->passed) << tool << ": " << c->message << "\n" << c->detail.dump(1);
    EXPECT_EQ(c->detail["error_count"], 0);
  }
}

TEST(cuda_sanitize, an_out_of_bounds_read_inside_the_guard_passes_verification_and_fails_memcheck) {
  auto plain = eval_sanitized(kernel("sanitize_oob_read_in_guard.cu"), false);
  EXPECT_EQ(plain.status, "passed") << plain.message; // the guards cannot see a read
  auto ev = eval_sanitized(kernel("sanitize_oob_read_in_guard.cu"));
  EXPECT_EQ(ev.status, "sanitize_memcheck") << ev.message;
  auto* c = find(ev, "sanitize_memcheck");
  ASSERT_NE(c, nullptr);
  EXPECT_NE(c->message.find("Invalid __global__ read"), std::string::npos) << c->message;
  EXPECT_NE(c->message.find("softmax_rows"), std::string::npos) << c->message;
}

TEST(cuda_sanitize, a_shared_memory_race_fails_racecheck) {
  auto ev = eval_sanitized(kernel("sanitize_shared_race.cu"));
  EXPECT_EQ(ev.status, "sanitize_racecheck") << ev.message;
  auto* c = find(ev, "sanitize_racecheck");
  ASSERT_NE(c, nullptr);
  EXPECT_NE(c->message.find("Race reported"), std::string::npos) << c->detail.dump(1);
}

TEST(cuda_sanitize, sanitize_from_source_is_the_hook_for_optimize) {
  auto s = worker::sanitize(small(), *small().seed, {.worker_exe = test::worker_binary(), .tools = {"memcheck"}});
  EXPECT_TRUE(s.skipped.empty()) << s.skipped;
  ASSERT_EQ(s.checks.size(), 1u);
  EXPECT_TRUE(s.passed()) << s.checks[0].message;
}
