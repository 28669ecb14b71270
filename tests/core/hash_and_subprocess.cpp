#include "core/hash.hpp"
#include "core/subprocess.hpp"

#include <gtest/gtest.h>

using namespace kforge;

TEST(hash, sha256_known_vector) {
  EXPECT_EQ(sha256_hex("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
}

TEST(hash, parts_are_length_delimited) {
  EXPECT_NE(hasher().add("ab").add("c").hex(), hasher().add("a").add("bc").hex());
  EXPECT_EQ(hasher().add("x").hex(), hasher().add("x").hex());
}

TEST(subprocess, captures_output_and_exit_code) {
  auto r = run_command({"sh", "-c", "echo hello; echo err >&2; exit 3"});
  EXPECT_EQ(r.exit_code, 3);
  EXPECT_FALSE(r.ok());
  EXPECT_NE(r.output.find("hello"), std::string::npos);
  EXPECT_NE(r.output.find("err"), std::string::npos);
}

TEST(subprocess, times_out_and_kills_the_group) {
  auto r = run_command({"sh", "-c", "sleep 30 & sleep 30"}, 0.5);
  EXPECT_TRUE(r.timed_out);
  EXPECT_LT(r.duration_s, 10.0);
}

TEST(subprocess, reports_signals) {
  auto r = run_command({"sh", "-c", "kill -SEGV $$"});
  EXPECT_TRUE(r.signaled);
  EXPECT_EQ(r.signal, 11);
}

TEST(subprocess, join_command_quotes) {
  EXPECT_EQ(join_command({"g++", "-DX=a b", "it's"}), "g++ '-DX=a b' 'it'\\''s'");
}
