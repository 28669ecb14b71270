// The watchdog bounds each step of a worker, not the whole worker: a correct candidate
// whose calls each take a while (or a problem whose tensors take seconds to draw and move)
// passes when every call fits the limit, however many calls verification makes; a call
// that never returns is still killed after one limit. On the H200 a 4096x65536 softmax's
// five trials took longer than the 60 s limit in all, and an honest kernel was reported hung.
#include "test_util.hpp"
#include "worker/evaluate.hpp"
#include "worker/supervisor.hpp"

#include <gtest/gtest.h>

using namespace kforge;

namespace {
// The reference's own softmax, slowed to `ms` per call.
std::filesystem::path slow_softmax(const test::temp_dir& d, const std::filesystem::path& reference, int ms) {
  auto f = d / ("slow_" + std::to_string(ms) + ".cpp");
  test::write(d / "reference_copy.h", read_file(reference)); // beside it: a confined build reads only its own folder
  test::write(f, "#include <kforge/kernel.h>\n#include <chrono>\n#include <thread>\n"
                 "#define kf_forward reference_forward\n#include \"reference_copy.h\"\n#undef kf_forward\n"
                 "KF_EXPORT int kf_forward(const kf_args* a) {\n"
                 "  std::this_thread::sleep_for(std::chrono::milliseconds(" + std::to_string(ms) + "));\n"
                 "  return reference_forward(a);\n}\n");
  return f;
}

// Verification only, on the CPU softmax problem, under a watchdog of `timeout_s`.
worker::evaluation verify(const std::filesystem::path& candidate, int trials_per_case, double timeout_s) {
  worker::evaluate_options o;
  o.worker_exe = test::worker_binary();
  o.trials_per_case = trials_per_case;
  o.time = false;
  o.timeout_s = timeout_s;
  return worker::evaluate(problem::load(test::problems_dir() / "softmax"), candidate, o);
}
} // namespace

TEST(watchdog, a_verification_longer_than_the_limit_passes_when_each_call_fits) {
  test::cache_env env;
  test::temp_dir d;
  const auto ev = verify(slow_softmax(d, test::problems_dir() / "softmax" / "reference.cpp", 400), 2, 2.0);
  ASSERT_EQ(ev.status, "passed") << ev.message;
  const int calls = 2 * static_cast<int>(ev.trials.size()); // two calls per trial
  ASSERT_GT(calls * 0.4, 2.0) << "the test must verify for longer than one limit in all";
  EXPECT_GT(ev.phases.at("verify_s").get<double>(), 2.0);
}

TEST(watchdog, a_call_longer_than_the_limit_is_a_timeout_naming_the_step) {
  test::cache_env env;
  test::temp_dir d;
  const auto ev = verify(slow_softmax(d, test::problems_dir() / "softmax" / "reference.cpp", 3000), 1, 1.0);
  EXPECT_EQ(ev.status, "timeout");
  EXPECT_NE(ev.message.find("no progress for 1 s"), std::string::npos) << ev.message;
  EXPECT_NE(ev.message.find("case '"), std::string::npos) << ev.message;
}
