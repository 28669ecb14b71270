// The tool profile (compute-sanitizer and ncu under kforge-confine): the tool and the target it
// starts may talk over the sandbox's own loopback, sockets and shared memory in a private /tmp
// and /dev/shm; the host's network, its sockets and its /tmp stay out of reach as for a worker.
#include "sandbox_util.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/un.h>

namespace fs = std::filesystem;
using namespace kforge;
using test::run_confined;

namespace {

struct tool_confined : test::confined {
  tool_confined() { policy.profile = sandbox::syscall_profile::tool; }
};

// A listening socket of the host's (the test's own namespaces).
struct host_listener {
  int fd = -1;
  int port = 0;
  std::string path;
  ~host_listener() {
    if (fd >= 0) ::close(fd);
    if (!path.empty()) ::unlink(path.c_str());
  }
  [[nodiscard]] bool pending() const {
    const int c = ::accept4(fd, nullptr, nullptr, SOCK_CLOEXEC);
    if (c >= 0) ::close(c);
    return c >= 0;
  }
};

void listen_tcp(host_listener& l) {
  l.fd = ::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof a;
  ASSERT_EQ(::bind(l.fd, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
  ASSERT_EQ(::listen(l.fd, 8), 0);
  ::getsockname(l.fd, reinterpret_cast<sockaddr*>(&a), &len);
  l.port = ntohs(a.sin_port);
}

void listen_unix(host_listener& l, const std::string& path) {
  l.fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  sockaddr_un a{};
  a.sun_family = AF_UNIX;
  std::snprintf(a.sun_path, sizeof a.sun_path, "%s", path.c_str());
  ASSERT_EQ(::bind(l.fd, reinterpret_cast<sockaddr*>(&a), sizeof a), 0) << path;
  ASSERT_EQ(::listen(l.fd, 8), 0);
  l.path = path;
}

} // namespace

TEST(tool_profile, talks_tcp_on_its_own_loopback_and_reaches_nothing_outside) {
  tool_confined c;
  const auto r = run_confined(c.policy, {"tcp-self"});
  KFORGE_REQUIRE_LAYERS(r, "network_namespace");
  EXPECT_TRUE(r.exited(0)) << r.describe();
  const auto* net = sandbox::find_layer(r.layers, "network_namespace");
  EXPECT_NE(net->detail.find("loopback, up"), std::string::npos) << net->detail;
  const auto* ll = sandbox::find_layer(r.layers, "landlock_network");
  EXPECT_FALSE(ll->active) << "never silently weaker: " << ll->detail;
  EXPECT_NE(ll->detail.find("not applied for the tool"), std::string::npos) << ll->detail;

  host_listener l;
  listen_tcp(l);
  const auto out = run_confined(c.policy, {"tcp", std::to_string(l.port)});
  EXPECT_TRUE(out.exited(1)) << out.describe();
  EXPECT_FALSE(l.pending()) << "the tool's sandbox reached the host's 127.0.0.1:" << l.port;
}

TEST(tool_profile, a_worker_still_gets_no_tcp_at_all) {
  test::confined c;
  const auto r = run_confined(c.policy, {"tcp-self"});
  KFORGE_REQUIRE_LAYERS(r, "seccomp");
  EXPECT_TRUE(r.exited(1)) << r.describe();
}

TEST(tool_profile, tmp_and_shm_are_private_and_writable) {
  tool_confined c;
  const auto name = "kf-tool-" + test::random_token();
  for (const std::string dir : {"/tmp", "/dev/shm"}) {
    if (!fs::is_directory(dir)) continue;
    const auto r = run_confined(c.policy, {"write", dir + "/" + name});
    KFORGE_REQUIRE_LAYERS(r, "mount_namespace", "landlock_filesystem");
    EXPECT_TRUE(r.exited(0)) << dir << ": " << r.describe();
    EXPECT_FALSE(fs::exists(dir + "/" + name)) << "the tool's " << dir << " is the host's";
  }
  // A worker may write in neither.
  test::confined w;
  const auto r = run_confined(w.policy, {"write", "/dev/shm/" + name});
  EXPECT_TRUE(r.exited(1)) << r.describe();
  EXPECT_FALSE(fs::exists("/dev/shm/" + name));
}

TEST(tool_profile, connects_through_a_socket_file_of_its_own_but_not_to_the_hosts) {
  tool_confined c;
  const auto self = run_confined(c.policy, {"unix-self", "/tmp"});
  KFORGE_REQUIRE_LAYERS(self, "mount_namespace", "seccomp");
  EXPECT_TRUE(self.exited(0)) << self.describe();

  // The host's sockets in /tmp and /run: hidden by the private /tmp and the empty /run.
  for (const std::string dir : {"/tmp", "/run"}) {
    if (!fs::is_directory(dir)) continue;
    host_listener l;
    listen_unix(l, dir + "/kf-host-" + test::random_token() + ".sock");
    const auto r = run_confined(c.policy, {"unix", l.path});
    EXPECT_TRUE(r.exited(1)) << dir << ": " << r.describe();
    EXPECT_FALSE(l.pending()) << "the tool's sandbox reached the host's " << l.path;
  }
}

TEST(tool_profile, what_the_policy_names_beneath_tmp_stays_readable) {
  // The cache (and a scratch dir) may live beneath /tmp: bound back under the private /tmp.
  test::temp_dir d; // beneath the system's temp dir
  if (d.path.string().rfind("/tmp/", 0) != 0) GTEST_SKIP() << "the temp dir is not beneath /tmp: " << d.path;
  test::write(d / "library.so", "not really");
  tool_confined c;
  c.policy.read_paths.push_back(d / "library.so");
  const auto r = run_confined(c.policy, {"read", (d / "library.so").string()});
  KFORGE_REQUIRE_LAYERS(r, "mount_namespace");
  EXPECT_TRUE(r.exited(0)) << r.describe();
  const auto* m = sandbox::find_layer(r.layers, "mount_namespace");
  EXPECT_NE(m->detail.find("private /tmp"), std::string::npos) << m->detail;
}

TEST(tool_profile, the_tools_child_may_name_its_threads_in_the_sandboxs_own_proc) {
  // The target a tool starts is a child whose /proc/<pid> did not exist when the rules were
  // made; the sanitizer's library names its threads there, and CUDA fails (error 304) without.
  tool_confined c;
  const auto r = run_confined(c.policy, {"child-comm"});
  KFORGE_REQUIRE_LAYERS(r, "pid_namespace", "mount_namespace", "landlock_filesystem");
  EXPECT_TRUE(r.exited(0)) << r.describe();
  const auto* fs_layer = sandbox::find_layer(r.layers, "landlock_filesystem");
  EXPECT_NE(fs_layer->detail.find("the sandbox's own /proc writable"), std::string::npos) << fs_layer->detail;
  // A worker's /proc stays read-only but for its own entry.
  test::confined w;
  EXPECT_TRUE(run_confined(w.policy, {"child-comm"}).exited(1));
}
