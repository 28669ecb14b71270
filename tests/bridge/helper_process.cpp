// The persistent helper process: answers on its own descriptor, prints kept apart, and a
// helper that hangs or dies is killed and reported, never waited on forever.
#include "bridge/helper_process.hpp"

#include <gtest/gtest.h>

using namespace kforge;

namespace {
// A stand-in helper: echoes each request line on fd 3, printing noise on stdout; "hang"
// sleeps, "die" exits.
const char* script = R"(
import os, sys, time
proto = os.fdopen(3, "w")
for line in sys.stdin:
    line = line.strip()
    print("noise for", line, flush=True)
    if line == "hang":
        time.sleep(60)
    if line == "die":
        sys.exit(7)
    proto.write("echo " + line + "\n")
    proto.flush()
)";
} // namespace

TEST(helper_process, answers_many_requests_from_one_process_with_prints_kept_apart) {
  bridge::helper_process h({"python3", "-c", script});
  for (int i = 0; i < 3; ++i) {
    h.clear_output();
    auto a = h.exchange("r" + std::to_string(i) + "\n", 30);
    ASSERT_TRUE(a.has_value()) << h.ended() << h.output_tail();
    EXPECT_EQ(*a, "echo r" + std::to_string(i));
    EXPECT_TRUE(h.alive());
  }
}

TEST(helper_process, a_hang_is_killed_at_the_timeout) {
  bridge::helper_process h({"python3", "-c", script});
  auto a = h.exchange("hang\n", 1.0);
  EXPECT_FALSE(a.has_value());
  EXPECT_FALSE(h.alive());
  EXPECT_EQ(h.ended().rfind("timed out", 0), 0u) << h.ended();
  EXPECT_FALSE(h.exchange("again\n", 1.0).has_value()); // never reused
}

TEST(helper_process, a_death_is_reported_with_its_exit_code_and_prints) {
  bridge::helper_process h({"python3", "-c", script});
  auto a = h.exchange("die\n", 30);
  EXPECT_FALSE(a.has_value());
  EXPECT_EQ(h.ended(), "exit code 7");
  EXPECT_NE(h.output_tail().find("noise for die"), std::string::npos) << h.output_tail();
}
