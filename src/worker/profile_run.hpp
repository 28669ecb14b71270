#pragma once
// `kforge profile`: one call of a candidate under Nsight Compute, counters read by exact
// metric name from ncu's raw CSV (profile/ncu.hpp), plus static evidence from the built
// binary's SASS (profile/sass.hpp) where cuobjdump is present.
//   auto r = worker::profile_candidate(problem, "cand.cu", {});
//   if (r.ok()) std::cout << profile::to_text(profile::digest(r.kernels, peaks), &r.sass);
// ncu runs with --clock-control none (the lent GPUs' clocks are never touched) and
// --profile-from-start off: only the candidate's second call, between
// cudaProfilerStart/Stop, is collected (the harness's poison and the warm-up stay out).
// Its report goes to a private log file, so a candidate printing to stdout cannot forge one.
// Nothing here throws for a profiler problem: `failure` says what went wrong, and callers
// carry on with timing only.
#include "problem/problem.hpp"
#include "profile/ncu.hpp"
#include "profile/sass.hpp"

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace kforge::worker {

struct profile_options {
  std::filesystem::path worker_exe; // empty: default_worker_exe()
  std::filesystem::path ncu;        // empty: find_ncu()
  int device = 0;
  double timeout_s = 600;
  std::optional<std::uint64_t> seed; // the inputs' seed; else fresh
};

struct profile_run {
  std::string failure;                        // why there are no counters (CPU problem, no ncu, ncu failed); empty when ok
  std::vector<profile::kernel_metrics> kernels; // one per launch of the profiled call, in launch order
  std::vector<profile::sass_function> sass;   // static: every function of the built binary
  std::string sass_note;                      // why there is no SASS (no cuobjdump), when so
  nlohmann::json resources = nlohmann::json::array(); // ptxas: registers, smem, spills per kernel
  std::string command;                        // the ncu command line
  std::string log;                            // ncu's output (CSV), truncated
  double wall_s = 0;
  nlohmann::json confinement;                 // what the profiled worker ran under (worker_outcome::confinement)
  [[nodiscard]] bool ok() const { return failure.empty(); }
};

/// $KFORGE_NCU, else ncu beside nvcc, in the toolkit's nsight-compute folder, or on PATH; empty if none.
[[nodiscard]] std::filesystem::path find_ncu();
/// $KFORGE_CUOBJDUMP, else beside nvcc, on PATH, or third_party/cudatools/bin (scripts/setup.sh); empty if none.
[[nodiscard]] std::filesystem::path find_cuobjdump();

/// The SASS of a built candidate (.so or .cubin). @return empty with *note saying why when it cannot.
[[nodiscard]] std::vector<profile::sass_function> static_sass(const std::filesystem::path& library, std::string* note);

/// Builds the candidate (cached), reads its SASS, and runs one call under ncu.
[[nodiscard]] profile_run profile_candidate(const problem::problem& p, const std::filesystem::path& source,
                                            const profile_options& opts);

/// The `kforge.profile/1` document of a run (docs/json.md) without the candidate: problem,
/// device, ok, failure, command, wall_s, static (SASS, resources), digest (against the
/// device's calibrated peaks, when calibrated; null on failure) and text (what a prompt
/// quotes: the digest, or "no profile: why" and the SASS summary).
[[nodiscard]] nlohmann::json profile_document(const problem::problem& p, const profile_run& run, int device = 0);

} // namespace kforge::worker
