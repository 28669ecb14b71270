// profile/digest: the bottleneck class of each kernel and the numbers behind it.
#include "profile/digest.hpp"

#include "test_util.hpp"

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

using namespace kforge::profile;

namespace {
std::string fixture(const std::string& name) { return kforge::test::read_test_file("profile/data/" + name); }

// A kernel with the given metrics, all in base units except percentages (unit "%").
kernel_metrics make(std::string name, std::initializer_list<std::pair<const char*, double>> values) {
  kernel_metrics k;
  k.name = std::move(name);
  for (auto& [m, v] : values) {
    k.values[m] = v;
    k.units[m] = std::string_view(m).find("pct") != std::string_view::npos ? "%" : "";
  }
  k.units["gpu__time_duration.sum"] = "second";
  return k;
}

bool mentions(const kernel_digest& d, const std::string& s) {
  for (auto& e : d.evidence)
    if (e.find(s) != std::string::npos) return true;
  return false;
}

std::string evidence(const kernel_digest& d) {
  std::string out;
  for (auto& e : d.evidence) out += e + "\n";
  return out;
}
} // namespace

TEST(profile_digest, fixture_kernels) {
  const auto ks = parse_ncu_csv(fixture("softmax_ncu_raw.csv"));
  ASSERT_EQ(ks.size(), 2u);
  const auto d = digest(ks, {.dram_bytes_per_s = 4.0e12});
  ASSERT_EQ(d.kernels.size(), 2u);
  EXPECT_NEAR(d.total_s, 44.2e-6, 1e-12);
  EXPECT_EQ(d.bound, "memory");

  const auto& a = d.kernels[0];
  EXPECT_EQ(a.bound, "memory") << evidence(a);
  EXPECT_NEAR(a.duration_s, 41.22e-6, 1e-15);
  EXPECT_NEAR(*a.dram_bytes_per_s, 3.26e12, 1e3);
  EXPECT_EQ(a.occupancy_limiter, "registers");
  EXPECT_EQ(a.registers, 72);
  EXPECT_EQ(a.smem_dynamic, 1020);
  EXPECT_EQ(a.grid_size, 8192);
  EXPECT_DOUBLE_EQ(*a.ld_sectors_per_request, 16.0);
  EXPECT_DOUBLE_EQ(*a.st_sectors_per_request, 4.0);
  EXPECT_FALSE(a.bank_conflicts_st.has_value()); // n/a
  ASSERT_EQ(a.top_stalls.size(), 3u);
  EXPECT_EQ(a.top_stalls[0].reason, "long_scoreboard");
  EXPECT_EQ(a.top_stalls[1].reason, "barrier");
  EXPECT_EQ(a.top_stalls[2].reason, "wait");
  EXPECT_TRUE(mentions(a, "DRAM 3.26 TB/s = 82% of peak")) << evidence(a);
  EXPECT_TRUE(mentions(a, "82% of the calibrated 4.00 TB/s")) << evidence(a);
  EXPECT_TRUE(mentions(a, "achieved occupancy 31% of 50% theoretical (limited by registers: 72 per thread)"))
      << evidence(a);
  EXPECT_TRUE(mentions(a, "1,024 local-memory loads, 512 stores")) << evidence(a);
  EXPECT_TRUE(mentions(a, "global loads 16.0 sectors/request (ideal 4 for 4-byte")) << evidence(a);
  // its SASS has 16-byte loads: 16 sectors per request is then no evidence of uncoalescing
  const auto sass = parse_sass(fixture("probe.sass"));
  const auto with_sass = digest(ks, {.dram_bytes_per_s = 4.0e12}, &sass);
  EXPECT_FALSE(mentions(with_sass.kernels[0], "sectors/request")) << evidence(with_sass.kernels[0]);
  sass_function narrow;
  narrow.global_load_bytes = {{4, 3}};
  EXPECT_TRUE(mentions(digest_kernel(ks[0], {}, &narrow), "(ideal 4 for its widest, 4-byte accesses: uncoalesced)"));
  EXPECT_FALSE(mentions(a, "global stores")) << evidence(a); // 4 per request is ideal

  const auto& b = d.kernels[1];
  EXPECT_EQ(b.bound, "launch") << evidence(b);
  EXPECT_EQ(b.occupancy_limiter, "warps"); // registers tie warps at 8 blocks: warps named
  EXPECT_TRUE(mentions(b, "2.98 us") || mentions(b, "3.0 us")) << evidence(b);
  EXPECT_TRUE(mentions(b, "0.02 waves")) << evidence(b);
  EXPECT_EQ(b.top_stalls.front().reason, "wait");
}

TEST(profile_digest, memory_bound) {
  const auto k = make("copy", {{"gpu__time_duration.sum", 200e-6},
                               {"dram__bytes.sum.per_second", 3.52e12},
                               {"dram__throughput.avg.pct_of_peak_sustained_elapsed", 82.0},
                               {"sm__throughput.avg.pct_of_peak_sustained_elapsed", 20.0},
                               {"launch__waves_per_multiprocessor", 10}});
  const auto d = digest_kernel(k, {});
  EXPECT_EQ(d.bound, "memory");
  EXPECT_TRUE(mentions(d, "DRAM 3.52 TB/s = 82% of peak")) << evidence(d);
  EXPECT_TRUE(mentions(d, "82% of peak vs compute 20%")) << evidence(d);
  // L2-bound traffic counts as memory too, and says so
  const auto l2 = digest_kernel(make("reuse", {{"gpu__time_duration.sum", 1e-3},
                                               {"lts__throughput.avg.pct_of_peak_sustained_elapsed", 75.0},
                                               {"dram__throughput.avg.pct_of_peak_sustained_elapsed", 12.0},
                                               {"sm__throughput.avg.pct_of_peak_sustained_elapsed", 40.0}}),
                                {});
  EXPECT_EQ(l2.bound, "memory");
  EXPECT_TRUE(mentions(l2, "L2 75% of peak")) << evidence(l2);
}

TEST(profile_digest, compute_bound) {
  const auto k = make("gemm", {{"gpu__time_duration.sum", 2e-3},
                               {"sm__throughput.avg.pct_of_peak_sustained_elapsed", 78.0},
                               {"gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed", 30.0},
                               {"smsp__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active", 64.0}});
  const auto d = digest_kernel(k, {});
  EXPECT_EQ(d.bound, "compute");
  EXPECT_TRUE(mentions(d, "compute (SM) 78% of peak vs memory 30%")) << evidence(d);
  EXPECT_TRUE(mentions(d, "tensor pipes active 64%")) << evidence(d);
}

TEST(profile_digest, latency_bound_names_top_stall_and_occupancy) {
  const auto k = make("chase", {{"gpu__time_duration.sum", 500e-6},
                                {"sm__throughput.avg.pct_of_peak_sustained_elapsed", 18.0},
                                {"gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed", 25.0},
                                {"sm__warps_active.avg.pct_of_peak_sustained_active", 31.0},
                                {"sm__maximum_warps_per_active_cycle_pct", 50.0},
                                {"launch__occupancy_limit_registers", 2},
                                {"launch__occupancy_limit_shared_mem", 3},
                                {"launch__occupancy_limit_warps", 4},
                                {"launch__occupancy_limit_blocks", 32},
                                {"launch__registers_per_thread", 128},
                                {"smsp__average_warps_issue_stalled_long_scoreboard_per_issue_active.ratio", 12.3},
                                {"smsp__average_warps_issue_stalled_selected_per_issue_active.ratio", 20.0},
                                {"smsp__average_warps_issue_stalled_barrier_per_issue_active.ratio", 2.1}});
  const auto d = digest_kernel(k, {});
  EXPECT_EQ(d.bound, "latency");
  EXPECT_EQ(d.occupancy_limiter, "registers");
  ASSERT_EQ(d.top_stalls.size(), 2u); // "selected" is never a stall
  EXPECT_EQ(d.top_stalls[0].reason, "long_scoreboard");
  EXPECT_TRUE(mentions(d, "neither unit is busy: memory 25%, compute 18%")) << evidence(d);
  EXPECT_TRUE(mentions(d, "top stall long_scoreboard")) << evidence(d);
  EXPECT_TRUE(mentions(d, "12.3 cycles")) << evidence(d);
  EXPECT_TRUE(mentions(d, "achieved occupancy 31% of 50% theoretical (limited by registers: 128 per thread)"))
      << evidence(d);
  // no counters at all: latency, and the evidence says they are missing
  const auto empty = digest_kernel(make("nothing", {}), {});
  EXPECT_EQ(empty.bound, "latency");
  EXPECT_TRUE(mentions(empty, "no throughput counters")) << evidence(empty);
}

TEST(profile_digest, launch_bound) {
  // tiny: whatever the counters say
  EXPECT_EQ(digest_kernel(make("t", {{"gpu__time_duration.sum", 3e-6},
                                     {"sm__throughput.avg.pct_of_peak_sustained_elapsed", 90.0}}),
                          {})
                .bound,
            "launch");
  // short and under half a wave
  const auto d = digest_kernel(make("s", {{"gpu__time_duration.sum", 8e-6},
                                          {"launch__waves_per_multiprocessor", 0.1},
                                          {"launch__grid_size", 16},
                                          {"launch__block_size", 128}}),
                               {});
  EXPECT_EQ(d.bound, "launch");
  EXPECT_TRUE(mentions(d, "8.0 us with 0.10 waves per SM (grid 16 x block 128)")) << evidence(d);
  // short but several waves: not launch
  EXPECT_NE(digest_kernel(make("w", {{"gpu__time_duration.sum", 8e-6}, {"launch__waves_per_multiprocessor", 2.0}}), {})
                .bound,
            "launch");
}

TEST(profile_digest, limiter_is_the_smallest_limit_ties_to_hardware_limits) {
  auto lim = [](double regs, double smem, double warps, double blocks) {
    return digest_kernel(make("k", {{"launch__occupancy_limit_registers", regs},
                                    {"launch__occupancy_limit_shared_mem", smem},
                                    {"launch__occupancy_limit_warps", warps},
                                    {"launch__occupancy_limit_blocks", blocks}}),
                         {})
        .occupancy_limiter;
  };
  EXPECT_EQ(lim(2, 8, 8, 32), "registers");
  EXPECT_EQ(lim(8, 1, 8, 32), "shared memory");
  EXPECT_EQ(lim(8, 8, 4, 32), "warps");
  EXPECT_EQ(lim(64, 64, 64, 32), "blocks");
  EXPECT_EQ(lim(4, 4, 4, 32), "warps");
  EXPECT_EQ(lim(3, 3, 8, 32), "registers");
  EXPECT_EQ(digest_kernel(make("k", {}), {}).occupancy_limiter, "");
}

TEST(profile_digest, sectors_per_request) {
  const auto d = digest_kernel(make("strided", {{"gpu__time_duration.sum", 1e-3},
                                                {"l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum", 32000},
                                                {"l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum", 1000},
                                                {"l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum", 4000},
                                                {"l1tex__t_requests_pipe_lsu_mem_global_op_st.sum", 1000}}),
                               {});
  EXPECT_DOUBLE_EQ(*d.ld_sectors_per_request, 32.0);
  EXPECT_DOUBLE_EQ(*d.st_sectors_per_request, 4.0);
  EXPECT_TRUE(mentions(d, "global loads 32.0 sectors/request")) << evidence(d);
  EXPECT_FALSE(mentions(d, "global stores")) << evidence(d);
  // zero requests: no ratio
  EXPECT_FALSE(digest_kernel(make("z", {{"l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum", 0},
                                        {"l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum", 0}}),
                             {})
                   .ld_sectors_per_request.has_value());
  // with SASS saying every load is 16 bytes wide, 16 sectors per request is ideal
  sass_function f;
  f.global_load_bytes = {{16, 4}};
  const auto v = digest_kernel(make("vec", {{"gpu__time_duration.sum", 1e-3},
                                            {"l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum", 16000},
                                            {"l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum", 1000}}),
                               {}, &f);
  EXPECT_FALSE(mentions(v, "sectors/request")) << evidence(v);
  const auto nv = digest_kernel(make("vec", {{"gpu__time_duration.sum", 1e-3},
                                             {"l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum", 16000},
                                             {"l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum", 1000}}),
                                {});
  EXPECT_TRUE(mentions(nv, "16.0 sectors/request")) << evidence(nv);
}

TEST(profile_digest, dram_percent_from_calibrated_peak_when_ncu_has_none) {
  const auto d = digest_kernel(make("copy", {{"gpu__time_duration.sum", 100e-6}, {"dram__bytes.sum", 300e6}}),
                               {.dram_bytes_per_s = 4e12});
  ASSERT_TRUE(d.dram_bytes_per_s.has_value());
  EXPECT_NEAR(*d.dram_bytes_per_s, 3e12, 1);
  EXPECT_NEAR(*d.dram_pct, 75.0, 1e-9);
  EXPECT_EQ(d.bound, "memory");
}

TEST(profile_digest, text_and_json) {
  const auto ks = parse_ncu_csv(fixture("softmax_ncu_raw.csv"));
  const std::vector<sass_function> sass = parse_sass(fixture("probe.sass"));
  const auto d = digest(ks, {.dram_bytes_per_s = 4.0e12}, &sass);
  const auto text = to_text(d, &sass);
  const auto lines = std::count(text.begin(), text.end(), '\n') + 1;
  EXPECT_LT(lines, 25) << text;
  EXPECT_NE(text.find("softmax_rows(const float *, float *, int, int): 41.2 us (93%), memory-bound"), std::string::npos)
      << text;
  EXPECT_NE(text.find("launch-bound"), std::string::npos) << text;
  EXPECT_NE(text.find("DRAM 3.26 TB/s"), std::string::npos) << text;
  EXPECT_NE(text.find("stalls (cycles per issue): long_scoreboard 18.4, barrier 2.3, wait 1.1"), std::string::npos)
      << text;
  EXPECT_NE(text.find("SASS: softmax_rows: 22 instr"), std::string::npos) << text;
  EXPECT_EQ(text.find("gemm_wgmma"), std::string::npos) << text; // not profiled: not shown
  EXPECT_EQ(to_text(d).find("SASS"), std::string::npos);
  EXPECT_EQ(to_text(profile_digest{}), "profile: no kernel was profiled");

  const auto j = to_json(d);
  EXPECT_EQ(j["bound"], "memory");
  ASSERT_EQ(j["kernels"].size(), 2u);
  EXPECT_EQ(j["kernels"][0]["occupancy_limiter"], "registers");
  EXPECT_EQ(j["kernels"][0]["registers"], 72);
  EXPECT_TRUE(j["kernels"][0]["bank_conflicts_st"].is_null());
  EXPECT_EQ(j["kernels"][0]["top_stalls"][0]["reason"], "long_scoreboard");
  EXPECT_FALSE(j["kernels"][1]["evidence"].empty());
}

TEST(profile_digest, text_caps_many_launches) {
  std::vector<kernel_metrics> ks;
  for (int i = 0; i < 20; ++i) ks.push_back(make("k" + std::to_string(i), {{"gpu__time_duration.sum", (i + 1) * 1e-3}}));
  const auto text = to_text(digest(ks, {}));
  EXPECT_NE(text.find("... 14 more launches"), std::string::npos) << text;
  EXPECT_NE(text.find("[20] k19"), std::string::npos) << text;
  EXPECT_EQ(text.find("[1] k0"), std::string::npos) << text;
}
