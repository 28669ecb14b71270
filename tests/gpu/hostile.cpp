// The hostile-candidate suite's host-side attacks from inside a CUDA worker
// (tests/adversarial/hostile_cuda/): CUDA must work under the same confinement that stops them.
// Label: gpu.
#include "hostile_bait.hpp"
#include "problem/problem.hpp"
#include "worker/evaluate.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/un.h>

#include <gtest/gtest.h>

#include <cstring>
#include <unistd.h>

using namespace kforge;
namespace fs = std::filesystem;

TEST(gpu_hostile, host_side_attacks_are_contained_and_cuda_still_works) {
  test::lay_hostile_bait();
  sockaddr_in v4{};
  v4.sin_family = AF_INET;
  v4.sin_port = htons(47613);
  v4.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  test::listener tcp(AF_INET, SOCK_STREAM, reinterpret_cast<sockaddr*>(&v4), sizeof v4);
  sockaddr_un path{};
  path.sun_family = AF_UNIX;
  std::strcpy(path.sun_path, (test::hostile_bait / "net.sock").c_str());
  fs::remove(test::hostile_bait / "net.sock");
  test::listener unix_path(AF_UNIX, SOCK_STREAM, reinterpret_cast<sockaddr*>(&path), sizeof path);
  ::setenv("KFORGE_HOSTILE_TEST_API_KEY", "sk-hostile-gpu-91be", 1);

  worker::evaluate_options o;
  o.worker_exe = test::worker_binary();
  o.seed = 20261203;
  o.trials_per_case = 1;
  o.time = false;
  const auto ev = worker::evaluate(problem::load(test::source_dir() / "tests" / "gpu" / "problems" / "softmax_small"),
                                   test::source_dir() / "tests" / "adversarial" / "hostile_cuda" / "host_side_attacks.cu", o);
  ::unsetenv("KFORGE_HOSTILE_TEST_API_KEY");
  EXPECT_EQ(ev.status, "tolerance") << ev.message;
  EXPECT_FALSE(tcp.heard_anything());
  EXPECT_FALSE(unix_path.heard_anything());
  EXPECT_FALSE(fs::exists(test::hostile_bait / "written-cuda.txt"));
  EXPECT_FALSE(test::process_named("kf-hostile-gc")) << "a setsid grandchild outlived its CUDA worker";
  ASSERT_TRUE(ev.confinement.contains("verify")) << ev.confinement.dump();
  for (auto& l : ev.confinement["verify"]["layers"]) // as root the kernel does not enforce RLIMIT_NPROC (the report says so)
    if (::geteuid() != 0 || l.value("name", "") != "limits")
      EXPECT_TRUE(l.value("active", false)) << "layer not in force on the GPU machine: " << l.dump();
}
