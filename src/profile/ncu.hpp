#pragma once
// Nsight Compute counters by exact metric name, read from ncu's raw CSV. Pure functions
// over text: nothing here runs ncu (worker/profile_run.hpp does).
//   run: ncu --csv --page raw --metrics <profile::metrics_argument()> --log-file ncu.csv ./app
//   auto kernels = profile::parse_ncu_csv(read_file("ncu.csv"));    // one per launch
//   double t = profile::si(kernels[0], "gpu__time_duration.sum").value_or(0);   // seconds
//
// Promises:
//  - `values` holds every numeric column exactly as ncu printed it (thousands separators
//    removed), keyed by the column name; `units` its unit string ("usecond", "Gbyte/second",
//    "%", ...). Columns reading "n/a", "" or anything non-numeric are absent from `values`.
//  - `si` converts one value to base units, whatever scale ncu chose (--print-units auto):
//    time -> seconds, bytes -> bytes (K/M/G/T are decimal, as ncu prints; Ki/Mi/Gi binary),
//    X/second -> X per second, Hz (hz, Mhz, Ghz, cycle/nsecond ...) -> Hz. Percentages stay
//    percent (0..100), counts and ratios stay as printed.
//  - `parse_ncu_csv` tolerates anything before the header (==PROF== lines, the program's
//    own output) and between rows (lines that are not a row of the header's width).
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace kforge::profile {

/// Stall reasons R of smsp__average_warps_issue_stalled_<R>_per_issue_active.ratio, as
/// collected (each is cycles a warp spent stalled for R per issued instruction).
inline constexpr const char* stall_reasons[] = {
    "long_scoreboard", "barrier",      "mio_throttle",     "math_pipe_throttle", "wait",     "lg_throttle",
    "short_scoreboard", "not_selected", "selected",        "dispatch_stall",     "membar",   "drain",
    "no_instruction",  "imc_miss",     "branch_resolving", "sleeping",           "tex_throttle", "misc"};

/// The metrics kforge collects (sections SpeedOfLight, LaunchStats, Occupancy,
/// MemoryWorkloadAnalysis, WarpStateStats), by exact name.
inline constexpr const char* ncu_metrics[] = {
    "gpu__time_duration.sum",
    "dram__bytes.sum",
    "dram__bytes.sum.per_second",
    "dram__throughput.avg.pct_of_peak_sustained_elapsed",
    "lts__t_bytes.sum",
    "lts__throughput.avg.pct_of_peak_sustained_elapsed",
    "sm__throughput.avg.pct_of_peak_sustained_elapsed",
    "gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed",
    "sm__warps_active.avg.pct_of_peak_sustained_active",
    "sm__maximum_warps_per_active_cycle_pct",
    "launch__occupancy_limit_registers",
    "launch__occupancy_limit_shared_mem",
    "launch__occupancy_limit_warps",
    "launch__occupancy_limit_blocks",
    "launch__registers_per_thread",
    "launch__shared_mem_per_block_static",
    "launch__shared_mem_per_block_dynamic",
    "launch__block_size",
    "launch__grid_size",
    "launch__waves_per_multiprocessor",
    "smsp__inst_executed_op_local_ld.sum",
    "smsp__inst_executed_op_local_st.sum",
    "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum",
    "l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum",
    "l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum",
    "l1tex__t_requests_pipe_lsu_mem_global_op_st.sum",
    "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum",
    "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum",
    "smsp__inst_executed.sum",
    "sm__cycles_elapsed.avg.per_second",
    "smsp__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active",
    "smsp__average_warps_issue_stalled_long_scoreboard_per_issue_active.ratio",
    "smsp__average_warps_issue_stalled_barrier_per_issue_active.ratio",
    "smsp__average_warps_issue_stalled_mio_throttle_per_issue_active.ratio",
    "smsp__average_warps_issue_stalled_math_pipe_throttle_per_issue_active.ratio",
    "smsp__average_warps_issue_stalled_wait_per_issue_active.ratio",
    "smsp__average_warps_issue_stalled_lg_throttle_per_issue_active.ratio",
    "smsp__average_warps_issue_stalled_short_scoreboard_per_issue_active.ratio",
    "smsp__average_warps_issue_stalled_not_selected_per_issue_active.ratio",
    "smsp__average_warps_issue_stalled_selected_per_issue_active.ratio",
    "smsp__average_warps_issue_stalled_dispatch_stall_per_issue_active.ratio",
    "smsp__average_warps_issue_stalled_membar_per_issue_active.ratio",
    "smsp__average_warps_issue_stalled_drain_per_issue_active.ratio",
    "smsp__average_warps_issue_stalled_no_instruction_per_issue_active.ratio",
    "smsp__average_warps_issue_stalled_imc_miss_per_issue_active.ratio",
    "smsp__average_warps_issue_stalled_branch_resolving_per_issue_active.ratio",
    "smsp__average_warps_issue_stalled_sleeping_per_issue_active.ratio",
    "smsp__average_warps_issue_stalled_tex_throttle_per_issue_active.ratio",
    "smsp__average_warps_issue_stalled_misc_per_issue_active.ratio",
};

/// The stall metric for reason R ("long_scoreboard" -> smsp__average_warps_issue_stalled_..._per_issue_active.ratio).
[[nodiscard]] std::string stall_metric(std::string_view reason);

/// ncu_metrics joined with commas, for `ncu --metrics`.
[[nodiscard]] std::string metrics_argument();

/// One profiled kernel launch.
struct kernel_metrics {
  int id = 0;                                  // ncu's "ID" column (launch order within the report)
  std::string name;                            // "Kernel Name", demangled as ncu prints it
  std::string grid, block;                     // "Grid Size", "Block Size" as printed: "(1024, 1, 1)"
  std::map<std::string, double> values;        // metric (or other numeric column) -> value as printed
  std::map<std::string, std::string> units;    // metric -> unit string as printed ("" when none)
};

/// Parses the output of `ncu --csv --page raw --metrics ...`.
/// @return one entry per data row (profiled launch), in file order; empty when ncu
///         profiled no kernel or the text holds no CSV at all.
/// @throws kforge::error (worker) when there is no CSV header and the text holds ncu's
///         ==ERROR== lines; the message is ncu_failure's reason.
[[nodiscard]] std::vector<kernel_metrics> parse_ncu_csv(std::string_view text);

/// `metric` of `k` in base units (see the header comment); nullopt when absent or its
/// unit is one this function does not know.
[[nodiscard]] std::optional<double> si(const kernel_metrics& k, const std::string& metric);

/// The factor from `unit` to base units: "usecond" and "us" -> 1e-6, "Gbyte/second" and
/// "GB/s" -> 1e9, "cycle/nsecond" -> 1e9, "Ghz" -> 1e9; 1 for "", "%" and counted things
/// ("inst", "register/thread", "SM"); nullopt for a known unit behind an unknown prefix.
[[nodiscard]] std::optional<double> unit_scale(std::string_view unit);

/// One line saying why ncu failed, from its combined stdout/stderr (or log file): the
/// ==ERROR== lines, with the fix for a permission error and the name of an unknown
/// metric; "" when there is no ncu error.
[[nodiscard]] std::string ncu_failure(std::string_view stdout_and_stderr);

} // namespace kforge::profile
