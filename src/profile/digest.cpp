#include "profile/digest.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <numeric>

namespace kforge::profile {
namespace {

std::optional<double> get(const kernel_metrics& k, const char* metric) { return si(k, metric); }

std::optional<int> get_int(const kernel_metrics& k, const char* metric) {
  auto v = si(k, metric);
  if (!v) return std::nullopt;
  return static_cast<int>(std::llround(*v));
}

std::optional<double> max_of(std::initializer_list<std::optional<double>> xs) {
  std::optional<double> m;
  for (auto& x : xs)
    if (x && (!m || *x > *m)) m = x;
  return m;
}

// 1234567 -> "1,234,567"
std::string thousands(double v) {
  const auto n = static_cast<long long>(std::llround(v));
  std::string digits = std::to_string(n < 0 ? -n : n), out;
  for (std::size_t i = 0; i < digits.size(); ++i) {
    if (i && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return (n < 0 ? "-" : "") + out;
}

std::string bandwidth(double bytes_per_s) {
  if (bytes_per_s >= 1e12) return fmt::format("{:.2f} TB/s", bytes_per_s / 1e12);
  if (bytes_per_s >= 1e9) return fmt::format("{:.1f} GB/s", bytes_per_s / 1e9);
  return fmt::format("{:.1f} MB/s", bytes_per_s / 1e6);
}

std::string pct(double p) { return fmt::format("{:.0f}%", p); }

const char* stall_meaning(const std::string& r) {
  if (r == "long_scoreboard") return "waiting on global/local memory";
  if (r == "barrier") return "waiting at a block barrier";
  if (r == "mio_throttle") return "shared-memory/special-function queue full";
  if (r == "math_pipe_throttle") return "a math pipe is saturated";
  if (r == "wait") return "fixed-latency dependencies";
  if (r == "lg_throttle") return "global/local memory queue full";
  if (r == "short_scoreboard") return "waiting on shared memory or special functions";
  if (r == "not_selected") return "eligible, another warp issued";
  if (r == "dispatch_stall") return "dispatcher stalled";
  if (r == "membar") return "waiting on a memory fence";
  if (r == "drain") return "draining stores at exit";
  if (r == "no_instruction") return "instruction cache miss";
  if (r == "imc_miss") return "constant cache miss";
  if (r == "branch_resolving") return "resolving branches";
  if (r == "sleeping") return "warps sleeping";
  if (r == "tex_throttle") return "texture queue full";
  return "other";
}

// The widest global access in bytes over a map width -> count; nullopt when empty.
std::optional<double> max_width(const std::map<int, int>& m) {
  std::optional<double> w;
  for (auto& [bytes, c] : m)
    if (c > 0) w = bytes; // keys ascend
  return w;
}

void occupancy_evidence(kernel_digest& d) {
  if (!d.occupancy_achieved_pct) return;
  std::string s = "achieved occupancy " + pct(*d.occupancy_achieved_pct);
  if (d.occupancy_theoretical_pct) s += " of " + pct(*d.occupancy_theoretical_pct) + " theoretical";
  if (!d.occupancy_limiter.empty() && d.occupancy_theoretical_pct && *d.occupancy_theoretical_pct < 99.5) {
    s += " (limited by " + d.occupancy_limiter;
    if (d.occupancy_limiter == "registers" && d.registers) s += fmt::format(": {} per thread", *d.registers);
    if (d.occupancy_limiter == "shared memory" && (d.smem_static || d.smem_dynamic))
      s += fmt::format(": {} bytes per block", thousands(d.smem_static.value_or(0) + d.smem_dynamic.value_or(0)));
    if (d.occupancy_limiter == "warps" && d.block_size) s += fmt::format(": {} threads per block", *d.block_size);
    s += ")";
  }
  d.evidence.push_back(std::move(s));
}

std::optional<double> ratio(std::optional<double> num, std::optional<double> den) {
  if (!num || !den || *den <= 0) return std::nullopt;
  return *num / *den;
}

} // namespace

std::string format_duration(double s) {
  if (s >= 1.0) return fmt::format("{:.2f} s", s);
  if (s >= 1e-3) return fmt::format("{:.2f} ms", s * 1e3);
  if (s >= 1e-6) return fmt::format("{:.1f} us", s * 1e6);
  return fmt::format("{:.0f} ns", s * 1e9);
}

kernel_digest digest_kernel(const kernel_metrics& k, const device_peaks& peaks, const sass_function* sass) {
  kernel_digest d;
  d.name = k.name;
  d.duration_s = get(k, "gpu__time_duration.sum").value_or(0);
  d.dram_bytes_per_s = get(k, "dram__bytes.sum.per_second");
  if (!d.dram_bytes_per_s && d.duration_s > 0)
    if (auto b = get(k, "dram__bytes.sum")) d.dram_bytes_per_s = *b / d.duration_s;
  d.dram_pct = get(k, "dram__throughput.avg.pct_of_peak_sustained_elapsed");
  if (!d.dram_pct && d.dram_bytes_per_s && peaks.dram_bytes_per_s > 0)
    d.dram_pct = 100.0 * *d.dram_bytes_per_s / peaks.dram_bytes_per_s;
  d.l2_pct = get(k, "lts__throughput.avg.pct_of_peak_sustained_elapsed");
  d.sm_pct = get(k, "sm__throughput.avg.pct_of_peak_sustained_elapsed");
  d.memory_pct = get(k, "gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed");
  d.occupancy_theoretical_pct = get(k, "sm__maximum_warps_per_active_cycle_pct");
  d.occupancy_achieved_pct = get(k, "sm__warps_active.avg.pct_of_peak_sustained_active");

  // Limiter: the fewest blocks per SM. Ties go to the hardware limits (warps, blocks)
  // first, since shrinking registers or shared memory would not lift those.
  std::optional<double> best;
  for (auto [metric, label] : {std::pair{"launch__occupancy_limit_warps", "warps"},
                               std::pair{"launch__occupancy_limit_blocks", "blocks"},
                               std::pair{"launch__occupancy_limit_registers", "registers"},
                               std::pair{"launch__occupancy_limit_shared_mem", "shared memory"}}) {
    if (auto v = get(k, metric); v && (!best || *v < *best)) {
      best = v;
      d.occupancy_limiter = label;
    }
  }
  d.registers = get_int(k, "launch__registers_per_thread");
  d.smem_static = get_int(k, "launch__shared_mem_per_block_static");
  d.smem_dynamic = get_int(k, "launch__shared_mem_per_block_dynamic");
  d.block_size = get_int(k, "launch__block_size");
  d.grid_size = get_int(k, "launch__grid_size");
  d.waves = get(k, "launch__waves_per_multiprocessor");
  d.local_ld = get(k, "smsp__inst_executed_op_local_ld.sum");
  d.local_st = get(k, "smsp__inst_executed_op_local_st.sum");
  d.ld_sectors_per_request = ratio(get(k, "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum"),
                                   get(k, "l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum"));
  d.st_sectors_per_request = ratio(get(k, "l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum"),
                                   get(k, "l1tex__t_requests_pipe_lsu_mem_global_op_st.sum"));
  d.bank_conflicts_ld = get(k, "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum");
  d.bank_conflicts_st = get(k, "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum");
  d.tensor_pct = get(k, "smsp__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active");
  for (const char* r : stall_reasons) {
    if (std::string_view(r) == "selected") continue;
    if (auto v = get(k, stall_metric(r).c_str()); v && *v > 0) d.top_stalls.push_back({r, *v});
  }
  std::stable_sort(d.top_stalls.begin(), d.top_stalls.end(),
                   [](const stall& a, const stall& b) { return a.ratio > b.ratio; });
  if (d.top_stalls.size() > 3) d.top_stalls.resize(3);

  // --- classification (rules in the header) ---
  const auto mem_side = max_of({d.dram_pct, d.l2_pct, d.memory_pct});
  const bool tiny = d.duration_s > 0 && d.duration_s < k_launch_tiny_s;
  const bool short_and_small = d.duration_s > 0 && d.duration_s < k_launch_short_s && d.waves && *d.waves < k_launch_waves;
  if (tiny || short_and_small) {
    d.bound = "launch";
    std::string s = fmt::format("runs only {}", format_duration(d.duration_s));
    if (d.waves) s += fmt::format(" with {:.2f} waves per SM", *d.waves);
    if (d.grid_size && d.block_size) s += fmt::format(" (grid {} x block {})", thousands(*d.grid_size), *d.block_size);
    s += ": launch overhead and idle SMs dominate; fuse it or give it more work per launch";
    d.evidence.push_back(std::move(s));
  } else if (mem_side && *mem_side >= k_busy_pct && (!d.sm_pct || *mem_side > *d.sm_pct)) {
    d.bound = "memory";
  } else if (d.sm_pct && *d.sm_pct >= k_busy_pct && (!mem_side || *d.sm_pct >= *mem_side)) {
    d.bound = "compute";
  } else {
    d.bound = "latency";
  }

  // Throughput evidence (every class but launch, where it says little).
  if (d.bound != "launch") {
    if (d.dram_bytes_per_s && d.dram_pct) {
      std::string s = fmt::format("DRAM {} = {} of peak", bandwidth(*d.dram_bytes_per_s), pct(*d.dram_pct));
      if (peaks.dram_bytes_per_s > 0)
        s += fmt::format(" ({} of the calibrated {} copy rate)", pct(100.0 * *d.dram_bytes_per_s / peaks.dram_bytes_per_s),
                         bandwidth(peaks.dram_bytes_per_s));
      d.evidence.push_back(std::move(s));
    } else if (d.dram_pct) {
      d.evidence.push_back(fmt::format("DRAM {} of peak", pct(*d.dram_pct)));
    }
    if (d.bound == "memory" && d.l2_pct && (!d.dram_pct || *d.l2_pct > *d.dram_pct))
      d.evidence.push_back(d.dram_pct ? fmt::format("L2 {} of peak, above DRAM's {}", pct(*d.l2_pct), pct(*d.dram_pct))
                                      : fmt::format("L2 {} of peak", pct(*d.l2_pct)));
    if (mem_side || d.sm_pct) {
      const std::string m = mem_side ? pct(*mem_side) : "n/a";
      const std::string c = d.sm_pct ? pct(*d.sm_pct) : "n/a";
      if (d.bound == "memory") {
        d.evidence.push_back(fmt::format("memory units {} of peak vs compute {}", m, c));
        // Busy memory units with idle DRAM and L2: the pressure is on L1 and shared memory.
        if (mem_side && d.dram_pct && d.l2_pct && *d.dram_pct < 30 && *d.l2_pct < 30)
          d.evidence.push_back(fmt::format("DRAM {} and L2 {}: the busy unit is L1/shared memory (LSU/MIO), not DRAM",
                                           pct(*d.dram_pct), pct(*d.l2_pct)));
      }
      else if (d.bound == "compute")
        d.evidence.push_back(fmt::format("compute (SM) {} of peak vs memory {}", c, m));
      else
        d.evidence.push_back(fmt::format("neither unit is busy: memory {}, compute {} of peak", m, c));
    } else {
      d.evidence.push_back("no throughput counters in the report (sm__throughput, dram__throughput missing)");
    }
    if (d.bound == "latency" && !d.top_stalls.empty()) {
      const auto& s = d.top_stalls.front();
      d.evidence.push_back(fmt::format("top stall {} ({}): {:.1f} cycles per issued instruction", s.reason,
                                       stall_meaning(s.reason), s.ratio));
    }
  }
  occupancy_evidence(d);
  if (d.local_ld.value_or(0) > 0 || d.local_st.value_or(0) > 0)
    d.evidence.push_back(fmt::format("{} local-memory loads, {} stores: register spills or stack arrays",
                                     thousands(d.local_ld.value_or(0)), thousands(d.local_st.value_or(0))));
  const auto ld_width = sass ? max_width(sass->global_load_bytes) : std::nullopt;
  const auto st_width = sass ? max_width(sass->global_store_bytes) : std::nullopt;
  // A warp's request for w bytes per thread ideally touches 32*w/32 = w sectors.
  auto coalescing = [&](const char* what, std::optional<double> spr, std::optional<double> width) {
    if (!spr) return;
    const double ideal = width ? std::max(1.0, *width) : 4.0;
    if (*spr <= ideal * k_uncoalesced_ratio) return;
    if (width)
      d.evidence.push_back(fmt::format("global {} {:.1f} sectors/request (ideal {:.0f} for its widest, {:.0f}-byte "
                                       "accesses: uncoalesced)", what, *spr, ideal, *width));
    else
      d.evidence.push_back(fmt::format("global {} {:.1f} sectors/request (ideal 4 for 4-byte accesses, 16 for 16-byte "
                                       "ones; more: uncoalesced)", what, *spr));
  };
  coalescing("loads", d.ld_sectors_per_request, ld_width);
  coalescing("stores", d.st_sectors_per_request, st_width);
  if (d.bank_conflicts_ld.value_or(0) > 0 || d.bank_conflicts_st.value_or(0) > 0)
    d.evidence.push_back(fmt::format("shared-memory bank conflicts: {} on loads, {} on stores",
                                     thousands(d.bank_conflicts_ld.value_or(0)), thousands(d.bank_conflicts_st.value_or(0))));
  if (d.tensor_pct && *d.tensor_pct > 0)
    d.evidence.push_back(fmt::format("tensor pipes active {} of peak", pct(*d.tensor_pct)));
  return d;
}

profile_digest digest(const std::vector<kernel_metrics>& kernels, const device_peaks& peaks,
                      const std::vector<sass_function>* sass) {
  profile_digest d;
  std::size_t longest = 0;
  for (std::size_t i = 0; i < kernels.size(); ++i) {
    const sass_function* f = sass ? find_function(*sass, kernels[i].name) : nullptr;
    d.kernels.push_back(digest_kernel(kernels[i], peaks, f));
    d.total_s += d.kernels.back().duration_s;
    if (d.kernels[i].duration_s > d.kernels[longest].duration_s) longest = i;
  }
  if (!d.kernels.empty()) d.bound = d.kernels[longest].bound;
  return d;
}

nlohmann::json to_json(const kernel_digest& k) {
  auto opt = [](const auto& o) -> nlohmann::json { return o ? nlohmann::json(*o) : nlohmann::json(nullptr); };
  nlohmann::json stalls = nlohmann::json::array();
  for (auto& s : k.top_stalls) stalls.push_back({{"reason", s.reason}, {"ratio", s.ratio}});
  return {{"name", k.name},
          {"duration_s", k.duration_s},
          {"bound", k.bound},
          {"dram_bytes_per_s", opt(k.dram_bytes_per_s)},
          {"dram_pct", opt(k.dram_pct)},
          {"l2_pct", opt(k.l2_pct)},
          {"sm_pct", opt(k.sm_pct)},
          {"memory_pct", opt(k.memory_pct)},
          {"occupancy_theoretical_pct", opt(k.occupancy_theoretical_pct)},
          {"occupancy_achieved_pct", opt(k.occupancy_achieved_pct)},
          {"occupancy_limiter", k.occupancy_limiter},
          {"registers", opt(k.registers)},
          {"smem_static", opt(k.smem_static)},
          {"smem_dynamic", opt(k.smem_dynamic)},
          {"block_size", opt(k.block_size)},
          {"grid_size", opt(k.grid_size)},
          {"waves", opt(k.waves)},
          {"local_ld", opt(k.local_ld)},
          {"local_st", opt(k.local_st)},
          {"ld_sectors_per_request", opt(k.ld_sectors_per_request)},
          {"st_sectors_per_request", opt(k.st_sectors_per_request)},
          {"bank_conflicts_ld", opt(k.bank_conflicts_ld)},
          {"bank_conflicts_st", opt(k.bank_conflicts_st)},
          {"tensor_pct", opt(k.tensor_pct)},
          {"top_stalls", stalls},
          {"evidence", k.evidence}};
}

nlohmann::json to_json(const profile_digest& d) {
  nlohmann::json ks = nlohmann::json::array();
  for (auto& k : d.kernels) ks.push_back(to_json(k));
  return {{"kernels", ks}, {"total_s", d.total_s}, {"bound", d.bound}};
}

std::string to_text(const profile_digest& d, const std::vector<sass_function>* sass) {
  if (d.kernels.empty()) return "profile: no kernel was profiled";
  std::string out = fmt::format("profile: {} kernel launch{}, {} in all; bound: {} (the longest kernel)\n",
                                d.kernels.size(), d.kernels.size() == 1 ? "" : "es", format_duration(d.total_s), d.bound);
  // The longest k_text_kernels kernels, shown in launch order.
  std::vector<std::size_t> order(d.kernels.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](auto a, auto b) { return d.kernels[a].duration_s > d.kernels[b].duration_s; });
  double rest_s = 0;
  for (std::size_t i = k_text_kernels; i < order.size(); ++i) rest_s += d.kernels[order[i]].duration_s;
  const std::size_t rest_n = order.size() > k_text_kernels ? order.size() - k_text_kernels : 0;
  if (rest_n) order.resize(k_text_kernels);
  std::sort(order.begin(), order.end());
  for (auto i : order) {
    const auto& k = d.kernels[i];
    std::string name = k.name.size() > 120 ? k.name.substr(0, 117) + "..." : k.name;
    const double share = d.total_s > 0 ? 100.0 * k.duration_s / d.total_s : 0;
    out += fmt::format("[{}] {}: {} ({:.0f}%), {}-bound\n", i + 1, name, format_duration(k.duration_s), share, k.bound);
    for (auto& e : k.evidence) out += "  - " + e + "\n";
    if (!k.top_stalls.empty()) {
      std::string s = "  - stalls (cycles per issue):";
      for (std::size_t j = 0; j < k.top_stalls.size(); ++j)
        s += fmt::format("{} {} {:.1f}", j ? "," : "", k.top_stalls[j].reason, k.top_stalls[j].ratio);
      out += s + "\n";
    }
    if (sass)
      if (auto* f = find_function(*sass, k.name)) out += "  - SASS: " + summarize(*f) + "\n";
  }
  if (rest_n)
    out += fmt::format("... {} more launch{} ({} in all)\n", rest_n, rest_n == 1 ? "" : "es", format_duration(rest_s));
  out.pop_back();
  return out;
}

} // namespace kforge::profile
