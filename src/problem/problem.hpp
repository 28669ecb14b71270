#pragma once
// A kernel problem, parsed and validated from a problem directory:
//   problems/layernorm/problem.toml, reference.cpp (or .cu), seed.cpp (optional)
//   auto p = problem::load("problems/cpu/layernorm");   // throws with file, key and reason
// The format is documented in docs/problem-format.md.
#include "problem/distribution.hpp"

#include <kforge/kernel.h>

#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace kforge::problem {

enum class backend_kind { cpu, cuda };
enum class tensor_role { input, param, output };
enum class tolerance_policy {
  ratio, // error <= alpha * reference's error vs the float64 oracle + floor (default)
  rtol,  // |c - o| <= atol + rtol * |o| per element (for FP64 problems, whose reference is the oracle)
};

struct tensor_spec {
  std::string name;
  tensor_role role = tensor_role::input;
  kf_dtype dtype = KF_F32;  // the dtype at nominal precision
  bool follows_real = true; // dtype is the problem's real type: KF_REAL, double in the oracle
  std::vector<int64_t> shape;
  std::string torch_name; // a param of a [torch] problem: its key in the module's state ("conv.weight")
  [[nodiscard]] int64_t numel() const;
  /// @return the dtype this tensor has in the oracle build (f64 when follows_real).
  [[nodiscard]] kf_dtype oracle_dtype() const { return follows_real ? KF_F64 : dtype; }
};

/// One input distribution: every input tensor gets a generator. Tensors not named in a
/// case use the case named "default" if given, else normal(0, 1) (int_range(0, 9) for integers).
struct case_spec {
  std::string name;
  std::map<std::string, distribution> inputs; // tensor name -> generator
};

struct tolerance_spec {
  tolerance_policy policy = tolerance_policy::ratio;
  double alpha = 4.0;        // ratio: allowed multiple of the reference's own error
  double floor_ulps = 8.0;   // ratio: absolute floor, in units of eps(dtype) * max|oracle|
  double rtol = 0.0, atol = 0.0; // rtol policy
  bool deterministic = true; // a repeat on identical inputs must be bitwise identical
  // Opt-in lower precision (ratio policy): the floor counts ulps of this format instead of
  // the dtype's. "nominal" (default), "tf32", "bf16", "f16". Reports and the store say so.
  std::string precision = "nominal";
};

struct work_spec {
  double flops = 0.0;     // floating-point operations of one call, for the roofline
  double min_bytes = 0.0; // bytes one call must move at least (inputs read once, outputs written once)
};

struct eval_spec {
  int trials_per_case = 2;      // fresh seeds per case
  double time_budget_s = 2.0;   // per subject, for timing
  int min_samples = 10;
  int max_samples = 1000;
  double target_rel_ci = 0.01;  // stop timing once the median's 95% CI half-width is under this
  double timeout_s = 60.0;      // watchdog for one worker
  bool hidden_case = true;      // add eval::hidden_case (hard rows at random positions) to every evaluation
  double review_speedup = 50.0; // a speedup over the reference above this is flagged for review
  /// The sandbox's limits for a process that runs candidate code (worker/confinement.hpp):
  /// 0 = kforge's default, sized from the problem's tensors and the machine.
  double memory_limit_mb = 0;   // private memory (RLIMIT_DATA); device memory is not counted
  int max_threads = 0;          // threads and processes together (RLIMIT_NPROC in a user namespace)
};

/// [sanitize]: how `kforge eval --sanitize` runs compute-sanitizer. The tools are slow
/// (racecheck 10-100x), so a problem may give every tensor a smaller shape for it.
struct sanitize_spec {
  std::map<std::string, std::vector<int64_t>> shapes; // empty, or one entry per tensor
  std::vector<std::string> tools{"memcheck", "racecheck", "initcheck", "synccheck"};
  double timeout_s = 600.0; // watchdog for one tool's run
};

/// A named implementation timed beside every candidate (cuBLAS, cuDNN, ...), judged like one.
struct baseline_spec {
  std::string name;
  std::filesystem::path source; // absolute
};

/// [torch]: the reference is a PyTorch module (a KernelBench file: Model, get_inputs,
/// get_init_inputs), run by the bridge's Python helper (bridge/torch_helper.hpp) at the
/// problem's dtype (the reference) and in float64 (the oracle). Inputs reach forward() in
/// ABI order; params are loaded into the module's state by torch_name before each call.
struct torch_spec {
  std::filesystem::path module;   // absolute path of the .py file
  std::string init_inputs = "[]"; // a JSON array: Model(*init_inputs)
  bool compile = true;            // time torch.compile beside eager
  /// Inputs forward() takes as Python numbers (KernelBench's `A * s`): one-element tensors in
  /// the ABI, handed to the module as `.item()`.
  std::vector<std::string> scalars;
};

struct problem {
  std::filesystem::path dir;       // the problem directory
  std::filesystem::path toml_path; // dir / problem.toml
  std::string name;
  std::string description;
  backend_kind backend = backend_kind::cpu;
  kf_dtype dtype = KF_F32; // nominal real type (KF_REAL in the reference)
  std::vector<tensor_spec> tensors; // inputs and params in ABI order, then outputs in ABI order
  std::vector<case_spec> cases;     // at least one
  tolerance_spec tolerance;
  work_spec work;
  eval_spec eval;
  std::filesystem::path reference;       // absolute path of the reference source ([torch]: the module)
  std::optional<torch_spec> torch;       // [torch]: the reference is a PyTorch module
  std::optional<std::filesystem::path> seed; // absolute path of the seed candidate, if any
  std::vector<baseline_spec> baselines;      // [[baselines]]: timed beside the candidate
  sanitize_spec sanitize;                    // [sanitize]
  std::string toml_text;                 // the file as read, stored with the problem

  [[nodiscard]] std::vector<const tensor_spec*> inputs() const;  // inputs and params, ABI order
  [[nodiscard]] std::vector<const tensor_spec*> outputs() const; // ABI order
};

[[nodiscard]] std::string_view backend_name(backend_kind b);

/// Loads and validates `dir/problem.toml` (or `dir` itself when it names a .toml file).
/// @throws kforge::error (problem) "FILE: key 'K': REASON" for every mistake found first.
[[nodiscard]] problem load(const std::filesystem::path& dir);

/// The compute-sanitizer tools [sanitize] tools may name.
inline constexpr const char* sanitizer_tools[] = {"memcheck", "racecheck", "initcheck", "synccheck"};

/// A copy of `p` with tensor shapes replaced: `with_shapes(p, {{"x", {64, 4096}}})`.
/// @throws kforge::error (problem) naming the known tensors when a name is not one of them,
/// or when a shape is empty or has a non-positive dimension.
[[nodiscard]] problem with_shapes(const problem& p, const std::map<std::string, std::vector<int64_t>>& shapes);

/// `p` at its [sanitize] shapes (a copy of `p` when it gives none).
[[nodiscard]] problem sanitize_problem(const problem& p);

} // namespace kforge::problem
