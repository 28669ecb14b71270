// Descriptors sent over a Unix socket (core/fd_passing.hpp): how the judge's shared sets reach
// a candidate's worker on the GPU-resident path.
#include "core/error.hpp"
#include "core/fd_passing.hpp"

#include <gtest/gtest.h>

#include <fcntl.h>
#include <unistd.h>

using namespace kforge;

TEST(fd_passing, descriptors_arrive_with_their_label_as_new_descriptors_of_the_same_files) {
  int sv[2];
  make_fd_socket(sv);
  int p1[2], p2[2];
  ASSERT_EQ(::pipe(p1), 0);
  ASSERT_EQ(::pipe(p2), 0);
  send_fds(sv[0], "sets", {p1[1], p2[1]});
  auto got = recv_fds(sv[1]);
  EXPECT_EQ(got.label, "sets");
  ASSERT_EQ(got.fds.size(), 2u);
  EXPECT_NE(got.fds[0], p1[1]);
  EXPECT_TRUE(::fcntl(got.fds[0], F_GETFD) & FD_CLOEXEC) << "received descriptors are close-on-exec";
  // A write through the received copy arrives at the original pipe's read end.
  ASSERT_EQ(::write(got.fds[1], "x", 1), 1);
  char c = 0;
  ASSERT_EQ(::read(p2[0], &c, 1), 1);
  EXPECT_EQ(c, 'x');
  for (int fd : {p1[0], p1[1], p2[0], p2[1], got.fds[0], got.fds[1], sv[0]}) ::close(fd);
  // The peer gone: an error that says so, not a hang.
  try {
    (void)recv_fds(sv[1]);
    FAIL() << "expected an error";
  } catch (const error& e) {
    EXPECT_NE(std::string(e.what()).find("closed"), std::string::npos) << e.what();
  }
  ::close(sv[1]);
}

TEST(fd_passing, a_label_alone_is_a_message_too) {
  int sv[2];
  make_fd_socket(sv);
  send_fds(sv[0], "ready", {});
  auto got = recv_fds(sv[1]);
  EXPECT_EQ(got.label, "ready");
  EXPECT_TRUE(got.fds.empty());
  ::close(sv[0]);
  ::close(sv[1]);
}
