// A hostile program under a worker's policy, one attack per test: files, the network, other
// processes, resources. Each attack must fail; each has a control showing the same program
// succeeds where the policy allows it, so a refusal is the sandbox's doing. Where several
// layers stop an attack, the attack is also tried with each of them alone (the rest skipped),
// so no defence rests on another one silently.
#include "sandbox_util.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>

using namespace kforge;
using test::run_confined;

namespace {

// A listening socket the sandboxed program must not reach; `pending()` says whether anything
// connected.
struct listener {
  int fd = -1;
  int port = 0;
  std::string path;
  ~listener() {
    if (fd >= 0) ::close(fd);
    if (!path.empty() && path[0] != '@') ::unlink(path.c_str());
  }
  static listener tcp() {
    listener l;
    l.fd = ::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof a;
    if (::bind(l.fd, reinterpret_cast<sockaddr*>(&a), sizeof a) || ::listen(l.fd, 8) ||
        ::getsockname(l.fd, reinterpret_cast<sockaddr*>(&a), &len))
      throw std::runtime_error("tcp listener");
    l.port = ntohs(a.sin_port);
    return l;
  }
  static listener unix_socket(const std::string& path, bool abstract) {
    listener l;
    l.fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    sockaddr_un a{};
    a.sun_family = AF_UNIX;
    socklen_t len = sizeof a;
    if (abstract) {
      std::memcpy(a.sun_path + 1, path.data(), path.size());
      len = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + 1 + path.size());
      l.path = "@" + path;
    } else {
      std::snprintf(a.sun_path, sizeof a.sun_path, "%s", path.c_str());
      l.path = path;
    }
    if (::bind(l.fd, reinterpret_cast<sockaddr*>(&a), len) || ::listen(l.fd, 8)) throw std::runtime_error("unix listener");
    return l;
  }
  [[nodiscard]] bool pending() const {
    const int c = ::accept4(fd, nullptr, nullptr, SOCK_CLOEXEC);
    if (c >= 0) ::close(c);
    return c >= 0;
  }
};

// "" when at least one of `names` is in force, else why none is.
std::string none_of(const test::run_result& r, const std::vector<std::string>& names) {
  for (auto& n : names)
    if (r.lacking({n}).empty()) return "";
  return r.lacking(names);
}

// The layers that each stop an attack on their own, and what to skip to leave one alone.
std::vector<std::string> all_but(const std::vector<std::string>& keep, const std::vector<std::string>& among) {
  std::vector<std::string> skip;
  for (auto& n : among)
    if (std::find(keep.begin(), keep.end(), n) == keep.end()) skip.push_back(n);
  return skip;
}

} // namespace

// --- files ----------------------------------------------------------------------------------

TEST(attack_files, cannot_read_a_secret_outside_read_paths) {
  test::confined c;
  test::temp_dir secret_dir, allowed;
  test::write(secret_dir / "api-key", "sk-secret");
  test::write(allowed / "input", "fine");
  c.policy.read_paths.push_back(allowed.path);
  const auto r = run_confined(c.policy, {"read", (secret_dir / "api-key").string()});
  KFORGE_REQUIRE_LAYERS(r, "landlock_filesystem");
  EXPECT_TRUE(r.exited(1)) << r.describe();
  for (const char* p : {"/etc/shadow", "/root/.bashrc", "/proc/1/environ"}) {
    const auto s = run_confined(c.policy, {"read", p});
    EXPECT_TRUE(s.exited(1)) << p << ": " << s.describe();
  }
  // Controls: a read path is readable, and so is the secret once the policy allows it.
  const auto ok = run_confined(c.policy, {"read", (allowed / "input").string()});
  EXPECT_TRUE(ok.exited(0)) << ok.describe();
  c.policy.read_paths.push_back(secret_dir.path);
  const auto now = run_confined(c.policy, {"read", (secret_dir / "api-key").string()});
  EXPECT_TRUE(now.exited(0)) << now.describe();
}

TEST(attack_files, cannot_write_outside_scratch_and_write_paths) {
  test::confined c;
  test::temp_dir elsewhere, out, readonly;
  test::write(readonly / "reference.so", "original");
  c.policy.write_paths = {out.path};
  c.policy.read_paths.push_back(readonly.path);
  const auto r = run_confined(c.policy, {"write", (elsewhere / "planted").string()});
  KFORGE_REQUIRE_LAYERS(r, "landlock_filesystem");
  EXPECT_TRUE(r.exited(1)) << r.describe();
  EXPECT_FALSE(std::filesystem::exists(elsewhere / "planted"));
  // A read path is read-only: the reference cannot be overwritten nor replaced.
  const auto over = run_confined(c.policy, {"write", (readonly / "reference.so").string()});
  EXPECT_TRUE(over.exited(1)) << over.describe();
  const auto add = run_confined(c.policy, {"write", (readonly / "new.so").string()});
  EXPECT_TRUE(add.exited(1)) << add.describe();
  EXPECT_EQ(read_file(readonly / "reference.so"), "original");
  EXPECT_FALSE(std::filesystem::exists(readonly / "new.so"));
  // Controls: the write path and the scratch dir are writable.
  const auto ok = run_confined(c.policy, {"write", (out / "result").string()});
  EXPECT_TRUE(ok.exited(0)) << ok.describe();
  EXPECT_EQ(read_file(out / "result"), "pwned\n");
  const auto scratch = run_confined(c.policy, {"write", "in-scratch"});
  EXPECT_TRUE(scratch.exited(0)) << scratch.describe();
}

TEST(attack_files, cannot_execute_a_program_outside_read_paths) {
  test::confined c;
  test::temp_dir elsewhere;
  std::filesystem::copy_file("/bin/true", elsewhere / "dropped");
  ::chmod((elsewhere / "dropped").c_str(), 0755);
  const auto r = run_confined(c.policy, {"exec", (elsewhere / "dropped").string()});
  KFORGE_REQUIRE_LAYERS(r, "landlock_filesystem");
  EXPECT_TRUE(r.exited(1)) << r.describe();
  c.policy.read_paths.push_back(elsewhere.path);
  const auto ok = run_confined(c.policy, {"exec", (elsewhere / "dropped").string()});
  EXPECT_TRUE(ok.exited(0)) << ok.describe();  // /bin/true's own status
}

// --- network --------------------------------------------------------------------------------

class attack_tcp : public ::testing::TestWithParam<std::string> {};

TEST_P(attack_tcp, no_connect_to_a_listening_loopback_socket) {
  const std::vector<std::string> stoppers{"network_namespace", "landlock_network", "seccomp"};
  test::confined c;
  if (GetParam() != "all") c.policy.skip = all_but({GetParam()}, stoppers);
  auto l = listener::tcp();
  const auto r = run_confined(c.policy, {"tcp", std::to_string(l.port)});
  ASSERT_TRUE(r.has_report) << r.describe();
  if (auto why = none_of(r, GetParam() == "all" ? stoppers : std::vector<std::string>{GetParam()}); !why.empty())
    GTEST_SKIP() << why;
  EXPECT_TRUE(r.exited(1)) << r.describe();
  EXPECT_FALSE(l.pending()) << "the sandboxed program reached 127.0.0.1:" << l.port;
}
INSTANTIATE_TEST_SUITE_P(each_layer_alone, attack_tcp,
                         ::testing::Values("all", "network_namespace", "landlock_network", "seccomp"));

TEST(attack_network, no_connect_to_a_pathname_unix_socket) {
  test::confined c;
  test::temp_dir d;
  ::chmod(d.path.c_str(), 0755);
  auto l = listener::unix_socket((d / "agent.sock").string(), false);
  const auto r = run_confined(c.policy, {"unix", l.path});
  KFORGE_REQUIRE_LAYERS(r, "seccomp");
  EXPECT_TRUE(r.exited(1)) << r.describe();
  EXPECT_FALSE(l.pending());
  // The control: neither the network namespace nor Landlock stops this one, seccomp does.
  c.policy.skip = {"seccomp"};
  const auto open = run_confined(c.policy, {"unix", l.path});
  EXPECT_TRUE(open.exited(0)) << open.describe();
  EXPECT_TRUE(l.pending());
}

class attack_abstract : public ::testing::TestWithParam<std::string> {};

TEST_P(attack_abstract, no_connect_to_an_abstract_unix_socket) {
  const std::vector<std::string> stoppers{"network_namespace", "landlock_scope", "seccomp"};
  test::confined c;
  if (GetParam() != "all") c.policy.skip = all_but({GetParam()}, stoppers);
  auto l = listener::unix_socket(test::random_token(), true);
  const auto r = run_confined(c.policy, {"abstract", l.path.substr(1)});
  ASSERT_TRUE(r.has_report) << r.describe();
  if (auto why = none_of(r, GetParam() == "all" ? stoppers : std::vector<std::string>{GetParam()}); !why.empty())
    GTEST_SKIP() << why;
  EXPECT_TRUE(r.exited(1)) << r.describe();
  EXPECT_FALSE(l.pending());
}
INSTANTIATE_TEST_SUITE_P(each_layer_alone, attack_abstract,
                         ::testing::Values("all", "network_namespace", "landlock_scope", "seccomp"));

TEST(attack_network, unix_datagram_sockets_are_refused_but_what_cuda_uses_stays) {
  test::confined c;
  const auto r = run_confined(c.policy, {"unix-dgram"});
  KFORGE_REQUIRE_LAYERS(r, "seccomp");
  EXPECT_TRUE(r.exited(1)) << r.describe();
  // CUDA creates AF_UNIX SEQPACKET sockets and fails when socket() is refused (H200).
  const auto cuda = run_confined(c.policy, {"unix-seqpacket"});
  EXPECT_TRUE(cuda.exited(0)) << cuda.describe();
}

TEST(attack_network, the_32_bit_system_call_table_is_no_way_around_seccomp) {
#if !defined(__x86_64__)
  GTEST_SKIP() << "x86-64 only";
#endif
  test::confined c;
  c.policy.skip = {"network_namespace", "landlock_network"};  // leave seccomp alone in the way
  const auto r = run_confined(c.policy, {"i386-socket"});
  KFORGE_REQUIRE_LAYERS(r, "seccomp");
  // The control first: without seccomp the call works on this kernel (no ia32 emulation: skip).
  c.policy.skip.push_back("seccomp");
  const auto ctl = run_confined(c.policy, {"i386-socket"});
  if (!ctl.exited(0)) GTEST_SKIP() << "no 32-bit system calls on this kernel: " << ctl.describe();
  EXPECT_TRUE(r.signaled(SIGSYS)) << r.describe();
}

TEST(attack_processes, cannot_make_a_namespace_of_its_own) {
  test::confined c;
  const auto r = run_confined(c.policy, {"unshare-user"});
  KFORGE_REQUIRE_LAYERS(r, "seccomp");
  EXPECT_TRUE(r.exited(1)) << r.describe();
  // The control: seccomp is what stops it.
  c.policy.skip = {"seccomp"};
  const auto ctl = run_confined(c.policy, {"unshare-user"});
  EXPECT_TRUE(ctl.exited(0)) << ctl.describe();
}

// --- other processes ------------------------------------------------------------------------

class attack_process : public ::testing::TestWithParam<std::string> {
protected:
  // "all", "landlock" (Landlock alone: no PID namespace, no private /proc) or "pid_namespace"
  // (the namespaces alone: no Landlock, no seccomp).
  void configure(test::confined& c) const {
    if (GetParam() == "landlock") c.policy.skip = {"pid_namespace", "mount_namespace", "seccomp"};
    if (GetParam() == "pid_namespace") c.policy.skip = {"landlock_filesystem", "landlock_network", "landlock_scope", "seccomp"};
  }
  void require(const test::run_result& r) const {
    if (GetParam() == "all") {
      if (auto why = none_of(r, {"landlock_filesystem", "pid_namespace"}); !why.empty()) GTEST_SKIP() << why;
    }
    if (GetParam() == "landlock") {
      if (auto why = r.lacking({"landlock_filesystem"}); !why.empty()) GTEST_SKIP() << why;
    }
    if (GetParam() == "pid_namespace") {
      if (auto why = r.lacking({"pid_namespace", "mount_namespace"}); !why.empty()) GTEST_SKIP() << why;
    }
  }
};

TEST_P(attack_process, cannot_open_the_parents_memory) {
  test::confined c;
  configure(c);
  const auto me = std::to_string(::getpid());
  const auto r = run_confined(c.policy, {"mem", me});
  ASSERT_TRUE(r.has_report) << r.describe();
  require(r);
  if (IsSkipped()) return;
  EXPECT_TRUE(r.exited(1)) << r.describe();
}

TEST_P(attack_process, cannot_read_the_parents_environment) {
  ::setenv("OPENAI_API_KEY", "sk-in-the-parent", 1);
  test::confined c;
  configure(c);
  const auto r = run_confined(c.policy, {"environ", std::to_string(::getpid())});
  ::unsetenv("OPENAI_API_KEY");
  ASSERT_TRUE(r.has_report) << r.describe();
  require(r);
  if (IsSkipped()) return;
  EXPECT_TRUE(r.exited(1)) << r.describe();
  EXPECT_EQ(r.output.find("sk-in-the-parent"), std::string::npos);
  // The control: its own environment is readable the same way.
  const auto own = run_confined(c.policy, {"environ", "self"});
  EXPECT_TRUE(own.exited(0)) << own.describe();
}

TEST_P(attack_process, cannot_signal_the_parent) {
  test::confined c;
  configure(c);
  // SIGUSR1 blocked here, so a signal that got through stays pending where we can see it.
  sigset_t usr1, old;
  sigemptyset(&usr1);
  sigaddset(&usr1, SIGUSR1);
  ::sigprocmask(SIG_BLOCK, &usr1, &old);
  const auto r = run_confined(c.policy, {"kill", std::to_string(::getpid()), std::to_string(SIGUSR1)});
  sigset_t pending;
  ::sigpending(&pending);
  const bool got = sigismember(&pending, SIGUSR1);
  if (got) {
    timespec zero{};
    ::sigtimedwait(&usr1, nullptr, &zero);
  }
  ::sigprocmask(SIG_SETMASK, &old, nullptr);
  ASSERT_TRUE(r.has_report) << r.describe();
  if (GetParam() == "landlock") {
    if (auto why = r.lacking({"landlock_scope"}); !why.empty()) GTEST_SKIP() << why;
  } else {
    require(r);
    if (IsSkipped()) return;
  }
  EXPECT_TRUE(r.exited(1)) << r.describe();
  EXPECT_FALSE(got) << "the sandboxed program signalled the test process";
}

TEST_P(attack_process, cannot_trace_the_parent) {
  test::confined c;
  configure(c);
  const auto r = run_confined(c.policy, {"ptrace", std::to_string(::getpid())});
  ASSERT_TRUE(r.has_report) << r.describe();
  require(r);
  if (IsSkipped()) return;
  EXPECT_TRUE(r.exited(1)) << r.describe();
}
INSTANTIATE_TEST_SUITE_P(each_layer_alone, attack_process, ::testing::Values("all", "landlock", "pid_namespace"));

TEST(attack_processes, sees_only_the_sandboxs_own_processes) {
  test::confined c;
  const auto r = run_confined(c.policy, {"procs"});
  KFORGE_REQUIRE_LAYERS(r, "pid_namespace", "mount_namespace");
  ASSERT_TRUE(r.exited(0)) << r.describe();
  std::istringstream in(r.output);
  std::vector<int> pids;
  for (int p; in >> p;) pids.push_back(p);
  EXPECT_EQ(pids, (std::vector<int>{1, 2})) << "init and the program, nothing of the host";
}

// --- resources ------------------------------------------------------------------------------

TEST(attack_resources, allocating_four_times_the_memory_limit_fails) {
  test::confined c;
  c.policy.lim.processes = 0;  // the one limit root is exempt from (tested on its own)
  c.policy.lim.memory_bytes = 256ull << 20;
  const auto r = run_confined(c.policy, {"alloc", std::to_string(4 * c.policy.lim.memory_bytes)});
  KFORGE_REQUIRE_LAYERS(r, "limits");
  EXPECT_TRUE(r.exited(1)) << r.describe();
  const auto ok = run_confined(c.policy, {"alloc", std::to_string(16ull << 20)});
  EXPECT_TRUE(ok.exited(0)) << ok.describe();
}

TEST(attack_resources, more_threads_than_the_process_limit_fail) {
  // RLIMIT_NPROC does not bind uid 0 (the kernel exempts root): run as an unprivileged uid.
  if (auto why = test::unprivileged_unusable(); !why.empty()) GTEST_SKIP() << why;
  test::confined c;
  test::give_to_nobody(c.scratch.path());
  c.policy.lim.processes = 8;
  const auto r = run_confined(c.policy, {"threads", "16"}, {.unprivileged = true});
  KFORGE_REQUIRE_LAYERS(r, "limits");
  EXPECT_TRUE(r.exited(1)) << r.describe();
  EXPECT_NE(r.output.find("Resource temporarily unavailable"), std::string::npos) << r.output;
  // `processes` is the program's own: 8 tasks, the main thread and 7 more.
  const auto ok = run_confined(c.policy, {"threads", "7"}, {.unprivileged = true});
  EXPECT_TRUE(ok.exited(0)) << ok.describe();
}

TEST(attack_resources, as_root_the_sandboxs_init_ends_more_threads_than_the_limit) {
  // The kernel exempts uid 0 from RLIMIT_NPROC: init counts the sandbox's tasks instead.
  if (::getuid() != 0) GTEST_SKIP() << "runs only as root";
  test::confined c;
  c.policy.lim.processes = 8;
  const auto r = run_confined(c.policy, {"hold_threads", "16"});
  KFORGE_REQUIRE_LAYERS(r, "pid_namespace", "limits");
  const auto* l = sandbox::find_layer(r.layers, "limits");
  EXPECT_NE(l->detail.find("init counts them"), std::string::npos) << l->detail;
  EXPECT_TRUE(r.signaled(SIGKILL)) << r.describe();
  EXPECT_NE(r.output.find("kforge-confine: processes limit"), std::string::npos) << r.output;
  // The second report line, from init: why it ended them.
  const auto second = r.report_text.substr(r.report_text.find('\n') + 1);
  const auto j = nlohmann::json::parse(second.substr(0, second.find('\n')), nullptr, false);
  ASSERT_TRUE(j.is_object()) << r.report_text;
  EXPECT_EQ(j.value("limit", ""), "processes");
  EXPECT_NE(j.value("ended", "").find("over its limit of 8"), std::string::npos) << j.dump();
  // Under the limit the program runs to its end.
  const auto ok = run_confined(c.policy, {"hold_threads", "6"});
  EXPECT_TRUE(ok.exited(0)) << ok.describe();
  EXPECT_EQ(ok.report_text.find("\"ended\""), std::string::npos) << ok.report_text;
}

TEST(attack_resources, as_root_without_a_private_proc_the_report_says_the_process_limit_does_not_hold) {
  if (::getuid() != 0) GTEST_SKIP() << "runs only as root";
  // Without a PID namespace, or without a mount namespace to mount the sandbox's own /proc in,
  // init would count the host's processes (seen on the H200: a sanitizer run ended at once).
  for (const char* missing : {"pid_namespace", "mount_namespace"}) {
    test::confined c;
    c.policy.lim.processes = 8;
    c.policy.skip = {missing};
    const auto r = run_confined(c.policy, {"hold_threads", "2"});
    ASSERT_TRUE(r.has_report) << missing << ": " << r.describe();
    EXPECT_TRUE(r.exited(0)) << missing << ": " << r.describe();
    const auto* l = sandbox::find_layer(r.layers, "limits");
    ASSERT_NE(l, nullptr);
    EXPECT_FALSE(l->active) << missing << ": never silently weaker";
    EXPECT_NE(l->detail.find("RLIMIT_NPROC not enforced"), std::string::npos) << l->detail;
  }
}

TEST(attack_resources, writing_more_than_the_file_limit_is_sigxfsz) {
  test::confined c;
  c.policy.lim.processes = 0;  // the one limit root is exempt from (tested on its own)
  c.policy.lim.file_bytes = 1ull << 20;
  c.policy.lim.scratch_bytes = 16ull << 20;
  const auto r = run_confined(c.policy, {"fsize", std::to_string(4ull << 20)});
  KFORGE_REQUIRE_LAYERS(r, "limits");
  EXPECT_TRUE(r.signaled(SIGXFSZ)) << r.describe();
  const auto ok = run_confined(c.policy, {"fsize", std::to_string(512ull << 10)});
  EXPECT_TRUE(ok.exited(0)) << ok.describe();
}

TEST(attack_resources, spinning_past_the_cpu_limit_is_sigxcpu) {
  test::confined c;
  c.policy.lim.processes = 0;  // the one limit root is exempt from (tested on its own)
  c.policy.lim.cpu_s = 1;
  const auto r = run_confined(c.policy, {"spin"});
  KFORGE_REQUIRE_LAYERS(r, "limits");
  EXPECT_TRUE(r.signaled(SIGXCPU)) << r.describe();
}

TEST(attack_resources, the_scratch_tmpfs_is_bounded) {
  test::confined c;
  c.policy.lim.file_bytes = 0;
  c.policy.lim.scratch_bytes = 1ull << 20;
  const auto r = run_confined(c.policy, {"fsize", std::to_string(4ull << 20)});
  KFORGE_REQUIRE_LAYERS(r, "mount_namespace");
  EXPECT_TRUE(r.exited(1)) << r.describe();
  EXPECT_NE(r.output.find("No space left on device"), std::string::npos) << r.output;
}
