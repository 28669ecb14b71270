#pragma once
// A compact, evidence-backed digest of ncu counters, for LLM prompts and for people: per
// kernel a bottleneck class and the numbers that support it.
//   auto d = profile::digest(profile::parse_ncu_csv(csv), {.dram_bytes_per_s = 4.2e12});
//   std::cout << profile::to_text(d, &sass);   // <= ~12 lines per kernel
//   // profile: 2 kernel launches, 45.3 us in all; bound: memory (the longest kernel)
//   // [1] softmax_rows(const float *, float *, int, int): 41.2 us (91%), memory-bound
//   //   - DRAM 3.52 TB/s = 82% of peak
//   //   - achieved occupancy 31% of 50% theoretical (limited by registers)
//   //   - stalls (cycles per issue): long_scoreboard 12.3, barrier 2.1, mio_throttle 1.0
//   //   - SASS: softmax_rows: 312 instr; global loads 4B x6 16B x2; ...
//
// Classification of one kernel, first rule that holds (percentages are ncu's % of peak):
//  1. launch:  duration < k_launch_tiny_s (5 us), or duration < k_launch_short_s (10 us)
//              and waves per SM < k_launch_waves (0.5): the GPU is mostly idle, launch
//              overhead and the tail dominate.
//  2. memory:  memory side = max(DRAM %, L2 %, compute-memory %) >= k_busy_pct (60) and
//              above SM (compute) throughput %.
//  3. compute: SM throughput % >= k_busy_pct and >= the memory side.
//  4. latency: neither unit is busy; the evidence names the top stall reasons and the
//              achieved vs theoretical occupancy (and its limiter).
// A missing counter never satisfies a rule (a kernel with no counters is latency-bound,
// with evidence saying which counters were missing).
// Observations added whatever the class, each when its counters are present: occupancy,
// local-memory instructions (spills) when > 0, global sectors per request above
// k_uncoalesced_ratio x the ideal (a warp reading w bytes per thread ideally touches w
// 32-byte sectors: 4 for 4-byte accesses; with SASS, w is the kernel's widest global access), shared-memory bank conflicts when > 0, tensor
// pipe use when > 0.
// device_peaks: the DRAM peak fills in DRAM % when ncu did not report it and is named
// beside ncu's percentage when given; 0 means unknown. `flops` is carried for callers:
// the collected metrics count no floating-point operations.
#include "profile/ncu.hpp"
#include "profile/sass.hpp"

#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace kforge::profile {

inline constexpr double k_launch_tiny_s = 5e-6;
inline constexpr double k_launch_short_s = 10e-6;
inline constexpr double k_launch_waves = 0.5;
inline constexpr double k_busy_pct = 60.0;
inline constexpr double k_uncoalesced_ratio = 1.25; // sectors/request above ideal x this: uncoalesced
inline constexpr double k_low_occupancy_ratio = 0.8; // achieved below theoretical x this: named as low

struct device_peaks {
  double dram_bytes_per_s = 0; // calibrated copy bandwidth; 0: unknown
  double flops = 0;            // for the problem's dtype; 0: unknown
};

struct stall {
  std::string reason; // "long_scoreboard"
  double ratio = 0;   // cycles stalled per issued instruction
};

struct kernel_digest {
  std::string name;
  double duration_s = 0;
  std::optional<double> dram_bytes_per_s, dram_pct /*of peak, %*/, l2_pct, sm_pct /*compute throughput % of peak*/,
      memory_pct /*gpu__compute_memory_throughput*/;
  std::optional<double> occupancy_theoretical_pct, occupancy_achieved_pct;
  std::string occupancy_limiter; // "registers", "shared memory", "warps", "blocks": the smallest launch__occupancy_limit_*
  std::optional<int> registers, smem_static, smem_dynamic, block_size, grid_size;
  std::optional<double> waves;
  std::optional<double> local_ld, local_st; // local-memory instructions executed (spills, stack arrays)
  std::optional<double> ld_sectors_per_request, st_sectors_per_request; // 4 is ideal for 32-bit per thread
  std::optional<double> bank_conflicts_ld, bank_conflicts_st;
  std::vector<stall> top_stalls; // 3 largest, excluding "selected"
  std::optional<double> tensor_pct;
  std::string bound; // "memory", "compute", "latency", "launch"
  std::vector<std::string> evidence; // one short sentence each, with the numbers
};

struct profile_digest {
  std::vector<kernel_digest> kernels; // launch order
  double total_s = 0;
  std::string bound; // of the kernel with the most time; "" when no kernel
};

/// One kernel's digest. `sass`, when given, is that kernel's function: its global access
/// widths set the ideal sectors per request.
[[nodiscard]] kernel_digest digest_kernel(const kernel_metrics& k, const device_peaks& peaks,
                                          const sass_function* sass = nullptr);

/// Every launch's digest; `sass` (the binary's functions) is matched by kernel name.
[[nodiscard]] profile_digest digest(const std::vector<kernel_metrics>& kernels, const device_peaks& peaks,
                                    const std::vector<sass_function>* sass = nullptr);

[[nodiscard]] nlohmann::json to_json(const kernel_digest& k);
[[nodiscard]] nlohmann::json to_json(const profile_digest& d);

/// Compact text for a prompt: a summary line, then per kernel a header line (name,
/// duration, share of total, bound), its evidence, top stalls and (when `sass` holds its
/// function, matched by mangled or demangled name) the SASS summary. At most
/// k_text_kernels kernels, the longest ones, then a line for the rest.
inline constexpr std::size_t k_text_kernels = 6;
[[nodiscard]] std::string to_text(const profile_digest& d, const std::vector<sass_function>* sass = nullptr);

/// "41.2 us", "3.10 ms": a duration in the unit that suits it.
[[nodiscard]] std::string format_duration(double seconds);

} // namespace kforge::profile
