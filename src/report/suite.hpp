#pragma once
// What `kforge suite DIR` reports over a set of problems: one row per problem (its verdict
// and the medians of the evaluation that stands for it), speedups over the reference (eager
// PyTorch for a [torch] problem) and over torch.compile, and KernelBench's fast_p, as the
// document kforge.suite/1 (docs/json.md) or a terminal table.
//   std::vector<report::suite_row> rows{report::row_of_evaluation("softmax", eval_json), ...};
//   auto f = report::fast_p(rows, 1.0, "reference"); // correct and faster than eager, over every problem
//   std::cout << report::suite_table(rows);
// Pure functions over rows: this module judges nothing and reads no store (the CLI fills
// the rows).
#include <nlohmann/json.hpp>

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace kforge::report {

/// One problem of a suite.
struct suite_row {
  std::string problem;   // the problem's directory name
  std::string status;    // "passed", the failing check's name, "skipped" (no candidate), "error" (no verdict)
  std::string message;   // one line: what failed, or why it was skipped or errored
  std::string candidate; // the source judged (a path), "" when none was
  std::optional<double> candidate_s, reference_s, compile_s; // medians
  std::optional<long long> evaluation_id; // the evaluation that stands for the problem (kforge show ID)
  std::optional<long long> run_id;        // the search run, with --optimize (kforge show run N)
  bool torch = false;   // the reference is a PyTorch module: reference_s is eager PyTorch
  bool compile = false; // the problem times torch.compile ([torch] compile = true), so it has a compile baseline
  [[nodiscard]] bool passed() const { return status == "passed"; }
};

/// A row from an evaluation's kforge.eval/1 document: status, message, evaluation_id,
/// candidate.path and the medians of timing.candidate, timing.reference and
/// timing.torch_compile (each absent when not timed). `torch` and `compile` are the
/// problem's and left false for the caller to set.
[[nodiscard]] suite_row row_of_evaluation(std::string problem, const nlohmann::json& eval);

/// Baseline median / candidate median. Only a correct candidate has a speedup: nullopt
/// unless the row passed and both medians are known and positive.
[[nodiscard]] std::optional<double> speedup_over_reference(const suite_row& r);
[[nodiscard]] std::optional<double> speedup_over_compile(const suite_row& r);
/// `baseline` is "reference" or "compile". @throws kforge::error (internal) for another name.
[[nodiscard]] std::optional<double> speedup_over(const suite_row& r, std::string_view baseline);

/// Whether a row counts in fast_p's denominator against `baseline`. Against "reference":
/// every row (skipped and errored problems are problems the set did not solve). Against
/// "compile": rows with a compile time, and the rows of problems that time torch.compile
/// whose candidate did not pass (a failure is never timed, yet it must count against the
/// set). A correct candidate of such a problem without a compile time (torch.compile
/// could not run) has no baseline and is left out.
[[nodiscard]] bool counts_against(const suite_row& r, std::string_view baseline);

/// KernelBench's fast_p: the fraction of the problems considered whose candidate is
/// correct and more than p times faster than the baseline (a speedup of exactly p does
/// not count). fast_0 is the fraction correct: at p <= 0 no speedup is asked for.
struct fast_p_score {
  std::optional<double> value; // numerator / denominator; nullopt when the denominator is 0
  int numerator = 0;           // correct and speedup > p
  int denominator = 0;         // the rows that count against the baseline (counts_against)
};
[[nodiscard]] fast_p_score fast_p(const std::vector<suite_row>& rows, double p, std::string_view baseline = "reference");

/// The p at which kforge.suite/1 and the table report fast_p.
inline constexpr double fast_p_levels[] = {0.0, 0.5, 1.0, 1.5, 2.0};

/// The suite as schema "kforge.suite/1": `rows` in the given order, a `summary` of
/// verdicts and `fast_p` against "reference" and "compile" at every fast_p_levels p.
[[nodiscard]] nlohmann::json suite_json(const std::vector<suite_row>& rows);

/// The terminal rendering: a fixed-width table (problem, status, candidate, reference and
/// compile medians in ms, speedups over reference and compile, the evaluation), the fast_p
/// lines, then one line per problem that did not pass saying why.
[[nodiscard]] std::string suite_table(const std::vector<suite_row>& rows);

} // namespace kforge::report
