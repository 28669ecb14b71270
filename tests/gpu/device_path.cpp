// The GPU-resident evaluation path (label: gpu): kforge's device kernels against their host
// counterparts (the draw, the judge's scan and byte comparisons), memory shared between
// processes by file descriptor, and whole evaluations on both paths giving the same verdicts.
#include "core/dtype.hpp"
#include "core/fd_passing.hpp"
#include "device/backend.hpp"
#include "device/share.hpp"
#include "eval/compare.hpp"
#include "eval/device_kernels.hpp"
#include "eval/inputs.hpp"
#include "problem/distribution.hpp"
#include "scan_data.hpp"
#include "gpu/both_paths.hpp"
#include "test_util.hpp"
#include "worker/evaluate.hpp"
#include "worker/judge_keeper.hpp"

#include <gtest/gtest.h>

#include <cuda_runtime_api.h>
#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <random>

using namespace kforge;

namespace {

const eval::device_kernels& kernels() {
  static const eval::device_kernels k = [] {
    const auto a = eval::build_device_kernels();
    EXPECT_TRUE(a.ok) << a.diagnostics;
    return eval::load_device_kernels(a.library);
  }();
  return k;
}

struct device_copy {
  void* p = nullptr;
  explicit device_copy(const std::vector<std::uint8_t>& host) {
    EXPECT_EQ(cudaMalloc(&p, std::max<std::size_t>(host.size(), 1)), cudaSuccess);
    cudaMemcpy(p, host.data(), host.size(), cudaMemcpyHostToDevice);
  }
  ~device_copy() { cudaFree(p); }
};

kf_scan scan_on_device(const kf_scan_params& prm, const eval::host_tensor& c, const eval::host_tensor& o,
                       const eval::host_tensor& r, std::uint64_t n) {
  const auto& k = kernels();
  device_copy dc(c.bytes), dO(o.bytes), dr(r.bytes);
  const auto blocks = k.scan_blocks(n);
  void* parts = nullptr;
  cudaMalloc(&parts, blocks * sizeof(kf_scan));
  EXPECT_EQ(k.scan_output(&prm, dc.p, dO.p, dr.p, n, static_cast<kf_scan*>(parts), nullptr), 0);
  std::vector<kf_scan> host(blocks);
  cudaMemcpy(host.data(), parts, blocks * sizeof(kf_scan), cudaMemcpyDeviceToHost);
  cudaFree(parts);
  kf_scan all = kf_scan_empty();
  for (auto& x : host) kf_scan_combine(all, x);
  return all;
}

problem::problem softmax_small() { return problem::load(test::source_dir() / "tests" / "gpu" / "problems" / "softmax_small"); }

} // namespace

TEST(gpu_device_path, the_judges_scan_finds_what_the_host_scan_finds) {
  const auto p = softmax_small();
  const auto& spec = *p.outputs()[0];
  const auto n = static_cast<std::size_t>(spec.numel());
  auto [o, r, c] = test::normal_outputs(n, 7, 1e-6);
  // Unwritten elements, NaN where the oracle is finite, an Inf that agrees, two equal worst errors.
  for (std::size_t i : {n / 3, n / 3 + 1, n - 1}) std::memset(c.bytes.data() + i * 4, 0xFF, 4);
  store_from_double(c.bytes.data(), KF_F32, 1000, NAN);
  store_from_double(c.bytes.data(), KF_F32, 77, INFINITY);
  store_from_double(o.bytes.data(), KF_F64, 77, INFINITY);
  store_from_double(r.bytes.data(), KF_F32, 77, INFINITY);
  for (std::size_t i : {n / 2, n / 5}) store_from_double(c.bytes.data(), KF_F32, i, load_as_double(o.bytes.data(), KF_F64, i) + 0.5);
  for (auto policy : {problem::tolerance_policy::ratio, problem::tolerance_policy::rtol}) {
    auto tol = p.tolerance;
    tol.policy = policy;
    const auto prm = eval::scan_params(spec, tol, KF_F32, KF_F64, KF_F32);
    const auto h = eval::scan_output(spec, tol, c, o, r);
    const auto d = scan_on_device(prm, c, o, r, n);
    EXPECT_EQ(d.poisoned, 3u);
    EXPECT_EQ(d.poisoned, h.poisoned);
    EXPECT_EQ(d.first_poison, h.first_poison);
    EXPECT_EQ(d.bad_class, h.bad_class);
    EXPECT_EQ(d.first_bad_class, h.first_bad_class);
    EXPECT_EQ(d.worst, h.worst) << "ties go to the lower index on both sides";
    EXPECT_EQ(d.worst, n / 5);
    EXPECT_EQ(d.max_ec, h.max_ec);
    EXPECT_EQ(d.max_er, h.max_er);
    EXPECT_EQ(d.max_o, h.max_o);
    EXPECT_NEAR(d.ec2, h.ec2, 1e-12 * h.ec2) << "sums differ only in the order of additions";
    EXPECT_NEAR(d.o2, h.o2, 1e-12 * h.o2);
    EXPECT_EQ(d.rtol_fail, h.rtol_fail);
    EXPECT_EQ(d.worst_rtol, h.worst_rtol);
  }
  // Byte comparison: count and first.
  const auto& k = kernels();
  auto c2 = c;
  for (std::size_t i : {n - 5, std::size_t{12345}}) c2.bytes[i * 4 + 2] ^= 1;
  device_copy a(c.bytes), b(c2.bytes);
  void* res = nullptr;
  cudaMalloc(&res, 16);
  ASSERT_EQ(k.diff(a.p, b.p, n, 4, res, nullptr), 0);
  std::uint64_t got[2];
  cudaMemcpy(got, res, 16, cudaMemcpyDeviceToHost);
  EXPECT_EQ(got[0], 2u);
  EXPECT_EQ(got[1], 12345u);
  ASSERT_EQ(k.diff(a.p, a.p, n, 4, res, nullptr), 0);
  cudaMemcpy(got, res, 16, cudaMemcpyDeviceToHost);
  EXPECT_EQ(got[0], 0u);
  cudaFree(res);
}

TEST(gpu_device_path, inputs_drawn_on_the_device_equal_the_hosts_at_every_dtype) {
  struct kase {
    kf_dtype dt;
    const char* dist;
  };
  const kase cases[] = {{KF_F32, "uniform(-1, 1)"}, {KF_F32, "normal(0, 1)"},  {KF_F16, "normal(0, 3)"},
                        {KF_BF16, "logits(100)"},   {KF_F64, "uniform(0, 2)"}, {KF_I32, "int_range(-7, 9)"},
                        {KF_I64, "int_range(0, 1000)"}, {KF_U8, "int_range(0, 255)"}, {KF_F16, "uniform(-70000, 70000)"}};
  const std::size_t n = std::size_t{1} << 20;
  const auto& k = kernels();
  for (auto& c : cases) {
    const auto d = problem::parse_distribution(c.dist);
    std::vector<double> v(n);
    problem::draw(d, 99, 3, v.data(), n);
    std::vector<std::uint8_t> host(n * dtype_size(c.dt)), dev(host.size());
    for (std::size_t i = 0; i < n; ++i) store_from_double(host.data(), c.dt, i, v[i]);
    void* out = nullptr;
    ASSERT_EQ(cudaMalloc(&out, host.size()), cudaSuccess);
    ASSERT_EQ(k.draw_tensor(static_cast<int>(d.kind), d.a, d.b, 99, 3, c.dt, out, nullptr, n, nullptr), 0);
    cudaMemcpy(dev.data(), out, dev.size(), cudaMemcpyDeviceToHost);
    cudaFree(out);
    std::size_t differ = 0;
    const std::size_t w = dtype_size(c.dt);
    for (std::size_t i = 0; i < n; ++i) differ += std::memcmp(host.data() + i * w, dev.data() + i * w, w) != 0;
    std::printf("%-5s %-24s %zu of %zu differ\n", std::string(dtype_name(c.dt)).c_str(), c.dist, differ, n);
    // Uniform and integer draws are integer math: bitwise. The others go through log/exp,
    // within an ulp or two of double; rounded to f32 or narrower that almost never shows.
    if (std::string(c.dist).rfind("uniform", 0) == 0 || std::string(c.dist).rfind("int_range", 0) == 0)
      EXPECT_EQ(differ, 0u) << c.dist;
    else
      EXPECT_LE(differ, n / 100000) << c.dist;
  }
}

TEST(gpu_device_path, memory_crosses_processes_by_descriptor) {
  ASSERT_EQ(device::sharing_unavailable(0), "") << "VMM fd sharing is what the GPU-resident path needs";
  auto m = device::shared_memory::allocate(0, 3 << 20);
  ASSERT_GE(m.size(), std::size_t{3} << 20);
  std::vector<std::uint8_t> pattern(m.size());
  for (std::size_t i = 0; i < pattern.size(); ++i) pattern[i] = static_cast<std::uint8_t>(i * 7);
  ASSERT_EQ(cudaMemcpy(m.data(), pattern.data(), pattern.size(), cudaMemcpyHostToDevice), cudaSuccess);
  int sv[2];
  make_fd_socket(sv);
  // A fresh process (CUDA does not survive fork: the child execs the worker-less test binary's
  // sibling, so here it execs /proc/self/exe with a filter that runs the importer below).
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::close(sv[0]);
    ::dup2(sv[1], 5);
    ::setenv("KFORGE_TEST_SHARE_CHILD", "1", 1);
    const std::string self = std::filesystem::read_symlink("/proc/self/exe");
    ::execl(self.c_str(), self.c_str(), "--gtest_filter=gpu_device_path_child.imports_and_flips", nullptr);
    ::_exit(127);
  }
  ::close(sv[1]);
  const int fd = m.export_fd();
  send_fds(sv[0], std::to_string(m.size()), {fd});
  ::close(fd);
  int status = 0;
  ::waitpid(pid, &status, 0);
  ::close(sv[0]);
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "the importing process failed";
  std::vector<std::uint8_t> back(m.size());
  cudaMemcpy(back.data(), m.data(), back.size(), cudaMemcpyDeviceToHost);
  std::size_t flipped = 0;
  for (std::size_t i = 0; i < back.size(); ++i) flipped += back[i] == static_cast<std::uint8_t>(~pattern[i]);
  EXPECT_EQ(flipped, back.size()) << "the other process's writes are in this process's memory";
}

// Run only as the child of memory_crosses_processes_by_descriptor (descriptor 5 is its socket).
TEST(gpu_device_path_child, imports_and_flips) {
  if (!std::getenv("KFORGE_TEST_SHARE_CHILD")) GTEST_SKIP() << "runs as the child of memory_crosses_processes_by_descriptor";
  auto got = recv_fds(5);
  ASSERT_EQ(got.fds.size(), 1u);
  const auto bytes = std::stoull(got.label);
  auto m = device::shared_memory::import(0, got.fds[0], bytes);
  ::close(got.fds[0]);
  std::vector<std::uint8_t> h(bytes);
  ASSERT_EQ(cudaMemcpy(h.data(), m.data(), bytes, cudaMemcpyDeviceToHost), cudaSuccess);
  for (auto& b : h) b = static_cast<std::uint8_t>(~b);
  ASSERT_EQ(cudaMemcpy(m.data(), h.data(), bytes, cudaMemcpyHostToDevice), cudaSuccess);
}

// Both paths on the same inputs (the same --seed): the same statuses and worst elements, for
// the seed and for cheats that fail on each kind of check.
TEST(gpu_device_path, both_paths_give_the_same_verdicts) {
  test::cache_env cache;
  const auto p = softmax_small();
  const auto cuda = test::source_dir() / "tests" / "adversarial" / "cuda";
  const std::vector<std::filesystem::path> candidates = {
      test::source_dir() / "problems" / "softmax" / "seed.cu", cuda / "zeros.cu", cuda / "noop.cu",
      cuda / "write_past_end.cu", cuda / "zeroes_input.cu", cuda / "no_max_subtraction.cu",
      cuda / "sniffs_first_row.cu", cuda / "call_counter.cu", cuda / "deferred_host_thread.cu"};
  for (auto& c : candidates) {
    worker::evaluate_options o;
    o.worker_exe = test::worker_binary();
    o.seed = 20261204;
    o.trials_per_case = 1;
    o.time = false;
    o.timeout_s = 20;
    ::unsetenv("KFORGE_EVAL_PATH");
    const auto dev = worker::evaluate(p, c, o);
    ::setenv("KFORGE_EVAL_PATH", "host", 1);
    const auto host = worker::evaluate(p, c, o);
    ::unsetenv("KFORGE_EVAL_PATH");
    test::expect_same_verdicts(dev, host, c.filename().string());
  }
}

// Timing on the device path: a passing candidate is timed beside the reference, its timed
// calls re-verified by the judge; a time-only cheat fails timed_output there too.
TEST(gpu_device_path, timing_reverifies_timed_calls_through_the_judge) {
  test::cache_env cache;
  const auto p = softmax_small();
  worker::evaluate_options o;
  o.worker_exe = test::worker_binary();
  o.seed = 5;
  o.trials_per_case = 1;
  o.time_budget_s = 0.3;
  o.timeout_s = 20;
  const auto good = worker::evaluate(p, test::source_dir() / "problems" / "softmax" / "seed.cu", o);
  EXPECT_EQ(good.engine.value("path", ""), "device");
  EXPECT_EQ(good.status, "passed") << good.message;
  ASSERT_NE(good.timing("candidate"), nullptr);
  ASSERT_NE(good.timing("reference"), nullptr);
  int timed = 0;
  for (auto& c : good.checks) timed += c.name == "timed_output" && c.passed;
  EXPECT_EQ(timed, 3) << "three timed calls re-verified";
  const auto cheat =
      worker::evaluate(p, test::source_dir() / "tests" / "adversarial" / "cuda" / "caches_once_buffers_rotate.cu", o);
  EXPECT_EQ(cheat.status, "timed_output") << cheat.message;
}

// A search's judge (judge_keeper.hpp): kept between candidates, it gives each new trials, no
// truth of the last one's and fresh canaries, so a guard-breaking candidate in between changes
// nothing for the next; verdicts equal a fresh judge's.
TEST(gpu_device_path, a_kept_judge_serves_the_next_candidate_with_fresh_trials_and_guards) {
  test::cache_env cache;
  const auto p = softmax_small();
  const auto cuda = test::source_dir() / "tests" / "adversarial" / "cuda";
  const auto seed = test::source_dir() / "problems" / "softmax" / "seed.cu";
  auto keeper = std::make_shared<worker::judge_keeper>();
  worker::evaluate_options o;
  o.worker_exe = test::worker_binary();
  o.trials_per_case = 1;
  o.time = false;
  o.timeout_s = 20;
  o.judges = keeper;
  auto judge_of = [](const worker::evaluation& ev) { return ev.engine.value("judge", ""); };
  const auto a = worker::evaluate(p, seed, o);
  EXPECT_TRUE(a.passed()) << a.message;
  EXPECT_EQ(judge_of(a), "new");
  EXPECT_EQ(keeper->size(), 1u);
  for (auto c : {cuda / "write_past_end.cu", cuda / "zeros.cu", cuda / "overwrites_while_judged.cu", seed}) {
    auto fresh = o;
    fresh.judges = nullptr;
    fresh.seed = 77;
    auto kept = o;
    kept.seed = 77;
    const auto k = worker::evaluate(p, c, kept);
    const auto f = worker::evaluate(p, c, fresh);
    EXPECT_EQ(judge_of(k), "kept from an earlier evaluation") << c.filename();
    EXPECT_EQ(judge_of(f), "new, started during the builds") << c.filename(); // a lone evaluation's
    EXPECT_EQ(k.status, f.status) << c.filename() << "\n kept: " << k.message << "\n fresh: " << f.message;
    EXPECT_EQ(k.checks.size(), f.checks.size()) << c.filename();
    std::printf("  %-28s kept %-16s fresh %-16s (oracle %.2f s vs %.2f s)\n", c.filename().c_str(), k.status.c_str(),
                f.status.c_str(), k.phases.value("oracle_s", 0.0), f.phases.value("oracle_s", 0.0));
  }
  o.time = true; // timing's workers map the kept judge's sets too
  o.time_budget_s = 0.3;
  const auto t = worker::evaluate(p, seed, o);
  EXPECT_TRUE(t.passed()) << t.message;
  EXPECT_NE(t.timing("candidate"), nullptr);
}
