#pragma once
// A [torch] problem's reference, through the Python helper: its truth (the module at the
// problem's dtype and in float64 on each trial's inputs, the same inputs kforge generates
// for the candidate) and its timings (eager and torch.compile, with kforge's protocol).
//   auto truth = bridge::torch_truth(p, {{0, inputs0}, {1, inputs1}}, device, 120);
//   truth.reference.at({0, k}), truth.oracle.at({0, k})   // trial 0, output k
#include "eval/buffers.hpp"
#include "problem/problem.hpp"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

namespace kforge::bridge {

struct torch_truth_result {
  std::map<std::pair<int, std::size_t>, eval::host_tensor> reference, oracle; // (trial, output index)
  std::string device;                                                          // where the module ran
};

/// @param trials (trial number, nominal inputs in ABI order) for each trial; taken, so that
///        each trial's inputs are freed once written for the helper.
/// @throws kforge::error (problem) when the module fails or answers the wrong outputs.
/// `with_oracle` false: the module at the problem's dtype only (kforge check's other_seed
/// control replays that answer; the float64 run would double the bytes for nothing).
[[nodiscard]] torch_truth_result torch_truth(const problem::problem& p,
                                             std::vector<std::pair<int, std::vector<eval::host_tensor>>> trials,
                                             int device_index, double timeout_s, bool with_oracle = true);

/// One thing the helper times: kind "eager" or "compile" (the problem's module), or
/// "library" (a kforge kernel library called through the ABI from Python: the parity check).
struct torch_subject {
  std::string name;
  std::string kind;
  std::string library; // kind "library": the .so
};

struct torch_timing {
  std::string subject;
  std::vector<double> samples; // seconds
  std::string error;           // non-empty: this subject could not be timed (others still were)
};

struct torch_timing_config {
  double budget_s = 2.0;
  int warmup = 2;
  int min_samples = 10;
  int max_samples = 1000;
  double target_rel_ci = 0.01;
  int rotations = 3;
  std::uint64_t seed = 7; // draws the timed inputs
};

/// Times the subjects interleaved in one helper process, on fresh inputs of the problem's cases.
/// @throws kforge::error (problem) when the helper fails as a whole.
[[nodiscard]] std::vector<torch_timing> torch_time(const problem::problem& p, const std::vector<torch_subject>& subjects,
                                                   const torch_timing_config& cfg, int device_index, double timeout_s);

/// The rotations' (case name, seed) that torch_time draws: the same values wherever drawn.
[[nodiscard]] std::vector<std::pair<std::string, std::uint64_t>> torch_rotations(const problem::problem& p,
                                                                                 const torch_timing_config& cfg);
/// A "time" request without its inputs (torch_time adds a file; the device path stages them).
[[nodiscard]] nlohmann::json torch_time_request(const problem::problem& p, const std::vector<torch_subject>& subjects,
                                                const torch_timing_config& cfg, int device_index);
/// The helper's answer to "time", subject by subject.
[[nodiscard]] std::vector<torch_timing> torch_timings_of(const nlohmann::json& answer);

/// The device string the helper runs a problem on: "cuda:N" for CUDA problems, "cpu" else.
[[nodiscard]] std::string torch_device(const problem::problem& p, int device_index);

/// The helper request's description of a problem (module, init inputs, ABI names, dtypes);
/// a problem without [torch] has no module, and only "library" subjects can be timed.
[[nodiscard]] nlohmann::json torch_request(const problem::problem& p);

} // namespace kforge::bridge
