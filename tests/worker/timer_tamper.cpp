// Timer tampering by symbol interposition: a candidate that exports the clock functions
// the timer calls must not reach the timer. The worker's clock comes from libc (and the
// CUDA runtime, events included, is linked in statically); a candidate is loaded later,
// RTLD_LOCAL, so its clock_gettime is only its own. Were it otherwise (a candidate
// preloaded, or timing moved into code the candidate links against), a frozen clock would
// report every call as instant.
#include "test_util.hpp"
#include "worker/evaluate.hpp"

#include <gtest/gtest.h>

using namespace kforge;

TEST(timer_tamper, a_candidate_exporting_clock_gettime_cannot_freeze_the_timer) {
  test::cache_env env;
  test::temp_dir d;
  const auto p = problem::load(test::problems_dir() / "softmax");
  // The reference's own softmax, plus clock functions that always say "time zero".
  test::write(d / "frozen_clock.cpp", "#include <time.h>\n#include <sys/time.h>\n"
                                      "extern \"C\" __attribute__((visibility(\"default\"))) int clock_gettime(clockid_t, struct timespec* t) {\n"
                                      "  t->tv_sec = 0; t->tv_nsec = 0; return 0; }\n"
                                      "extern \"C\" __attribute__((visibility(\"default\"))) int gettimeofday(struct timeval* t, void*) {\n"
                                      "  t->tv_sec = 0; t->tv_usec = 0; return 0; }\n"
                                      "#include \"" + p.reference.string() + "\"\n");
  worker::evaluate_options o;
  o.worker_exe = test::worker_binary();
  o.trials_per_case = 1;
  o.time_budget_s = 0.3;
  const auto ev = worker::evaluate(p, d / "frozen_clock.cpp", o);
  ASSERT_EQ(ev.status, "passed") << ev.message;
  ASSERT_NE(ev.timing("candidate"), nullptr);
  // A frozen clock would make the median 0; the reference's own code takes real time.
  EXPECT_GT(ev.timing("candidate")->median_s, 0.1 * ev.timing("reference")->median_s);
}
