#pragma once
// Screens a problem with control kernels: candidates that are wrong on purpose, shipped in
// controls/<cpu|cuda>/ and generic over every problem:
//   zeros          every output all zero bytes
//   input_copy     every output filled with input 0's bytes
//   constant       every output element 1 in its dtype
//   uninitialised  writes nothing (the outputs keep the harness's poison)
//   other_seed     the reference's own answer for other inputs (its inputs resampled)
// Each is judged exactly as a candidate is, by the problem's own verification, and each
// must fail. One that passes is a finding: the problem cannot tell that wrong answer from a
// right one, and its message says why and what to change.
//   auto s = worker::screen(problem, opts);   // opts as for evaluate(); timing is always off
//   if (!s.ok()) for (auto& c : s.controls) if (c.passed()) std::puts(c.message.c_str());
#include "problem/problem.hpp"
#include "worker/evaluate.hpp"

#include <nlohmann/json.hpp>

#include <filesystem>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

namespace kforge::worker {

struct control_kernel {
  std::string name;             // "zeros", "input_copy", "constant", "uninitialised", "other_seed"
  std::filesystem::path source; // controls/<backend>/<name>.<ext>; other_seed: a generated wrapper
  std::string skip_reason;      // non-empty: this control cannot run on this problem, and why
};

enum class control_verdict {
  fails,        // the verification rejected the answer itself (tolerance, nonfinite, unwritten): as it must
  passes,       // accepted: the problem is too weak
  inconclusive, // rejected for another reason (build, crash, returned error): the answer was never judged
  skipped,      // not run on this problem (skip_reason)
};

struct control_result {
  std::string name;
  std::filesystem::path source;
  control_verdict verdict = control_verdict::fails;
  std::string status;  // the control's evaluation status ("tolerance", "unwritten", "passed", ...); "skipped"
  std::string message; // passes: why the problem is too weak and what to change; else the evaluation's message
  [[nodiscard]] bool passed() const { return verdict == control_verdict::passes; }
};

struct screening {
  std::vector<control_result> controls;
  /// @return true when no control passes.
  [[nodiscard]] bool ok() const;
  /// One line: "every control fails", or which pass and the likely cause.
  [[nodiscard]] std::string summary() const;
};

/// Runs one control as a candidate; the default is evaluate(p, c.source, o). kforge check
/// passes one that also records the evaluation in the store.
using control_runner = std::function<evaluation(const control_kernel& c, const evaluate_options& o)>;

/// The folder of the control kernels: $KFORGE_CONTROLS, else beside this executable
/// (bin/../controls), else the source tree kforge was built from.
[[nodiscard]] std::filesystem::path controls_dir();

/// The controls for p's backend, in screening order. other_seed's source is a wrapper,
/// written under <cache_root>/controls/, that builds the control around p's reference; its
/// text carries the hashes of the reference and the control, so editing either rebuilds it.
/// For a [torch] problem it replays the module's answer for other inputs, computed now
/// through the bridge on `device` (controls/<backend>/replay_answer.*).
/// @throws kforge::error (internal) when a control's source is missing; (problem) when a
/// [torch] problem's module fails.
[[nodiscard]] std::vector<control_kernel> control_kernels(const problem::problem& p, int device = 0);

/// Judges every control of p, with opts' seed, trials and worker (timing off).
/// @throws kforge::error (problem) when the problem itself is broken, as evaluate() does.
[[nodiscard]] screening screen(const problem::problem& p, const evaluate_options& opts,
                               const control_runner& run = {});

[[nodiscard]] std::string_view verdict_name(control_verdict v);
/// {"name", "verdict", "status", "passed", "message", "source"} (docs/json.md, kforge.check/1).
[[nodiscard]] nlohmann::json to_json(const control_result& c);

} // namespace kforge::worker
