// Telling whether the process that owns a row or a folder is still there.
#include "core/process_owner.hpp"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <csignal>

using namespace kforge;

TEST(process_owner, this_process_is_alive_and_round_trips) {
  const auto& me = current_process_owner();
  EXPECT_EQ(me.pid, ::getpid());
  EXPECT_GT(me.start_ticks, 0u);
  EXPECT_FALSE(me.boot_id.empty());
  EXPECT_EQ(owner_state(me), owner_liveness::alive);
  auto back = parse_process_owner(to_string(me));
  ASSERT_TRUE(back);
  EXPECT_EQ(*back, me);
  EXPECT_FALSE(parse_process_owner("garbage"));
  EXPECT_FALSE(parse_process_owner(""));
  EXPECT_FALSE(parse_process_owner("h b ns -4 5"));
}

TEST(process_owner, a_killed_child_is_gone) {
  int fds[2];
  ASSERT_EQ(::pipe(fds), 0);
  pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    const auto line = to_string(current_process_owner()) + "\n";
    (void)!::write(fds[1], line.data(), line.size());
    ::pause();
    ::_exit(0);
  }
  ::close(fds[1]);
  std::string line;
  char c;
  while (::read(fds[0], &c, 1) == 1 && c != '\n') line += c;
  ::close(fds[0]);
  auto owner = parse_process_owner(line);
  ASSERT_TRUE(owner) << line;
  EXPECT_EQ(owner->pid, child);
  EXPECT_EQ(owner_state(*owner), owner_liveness::alive);
  ::kill(child, SIGKILL);
  // Not yet reaped: a zombie has ended, so it counts as gone.
  for (int i = 0; i < 1000 && process_start_ticks(child); ++i) ::usleep(1000);
  EXPECT_EQ(owner_state(*owner), owner_liveness::gone);
  ::waitpid(child, nullptr, 0);
  EXPECT_EQ(owner_state(*owner), owner_liveness::gone);
}

TEST(process_owner, a_reused_pid_is_not_mistaken_for_its_owner) {
  auto other = current_process_owner();
  other.start_ticks += 1; // our pid, but a process that started at another time
  EXPECT_EQ(owner_state(other), owner_liveness::gone);
}

TEST(process_owner, another_host_or_namespace_cannot_be_judged_but_a_reboot_can) {
  auto elsewhere = current_process_owner();
  elsewhere.host = "some-other-host";
  elsewhere.pid = 1;
  EXPECT_EQ(owner_state(elsewhere), owner_liveness::unknown);
  auto other_ns = current_process_owner();
  other_ns.pid_ns = "pid:[1]";
  other_ns.start_ticks += 1;
  EXPECT_EQ(owner_state(other_ns), owner_liveness::unknown);
  auto before_reboot = current_process_owner();
  before_reboot.boot_id = "00000000-0000-0000-0000-000000000000";
  EXPECT_EQ(owner_state(before_reboot), owner_liveness::gone);
}
