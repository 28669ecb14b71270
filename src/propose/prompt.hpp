#pragma once
// The prompts kforge sends to an LLM, built from the templates in prompts/ (template.hpp):
// the problem, a candidate and its kforge.eval/1 evaluation become JSON contexts, and a
// task template renders them into one llm::request.
//   propose::prompt_builder b;                          // prompts from default_prompts_dir()
//   propose::device_facts dev{"cuda: NVIDIA H200", device::load_ceilings("cuda: NVIDIA H200")};
//   llm::request r = b.fix(p, dev, {.source = src, .label = "r1.b2", .eval = &doc}, 1, 3);
//   auto ideas = propose::parse_ideas(provider.complete(b.ideas(p, dev, best, tried, 5)).text, 5);
//
// Every request has `.system` = prompts/system.md for the candidate's dialect (the ABI, the
// answer format and the verification rules: the same for every problem of a dialect, so it
// is marked cacheable) and one user message = the task template (implement.md, fix.md,
// ideas.md, implement_idea.md) over the contexts below. prompts/README.md lists what each
// context holds; the template language is in template.hpp.
#include "device/calibration.hpp"
#include "llm/message.hpp"
#include "problem/problem.hpp"
#include "propose/template.hpp"

#include <nlohmann/json.hpp>

#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace kforge::propose {

/// Where the prompt templates are: $KFORGE_PROMPTS if set, else data_path("prompts")
/// (core/fs.hpp: installed, beside the executable's checkout, or the source tree).
[[nodiscard]] std::filesystem::path default_prompts_dir();

/// The device a problem is optimised for, as prompts describe it.
struct device_facts {
  std::string name;                        // the backend's description, e.g. "cuda: NVIDIA H200"
  std::optional<device::ceilings> ceilings; // kforge calibrate's measurements, when taken
};

/// A candidate a prompt shows. `eval` must outlive the call that takes it.
struct candidate_ref {
  std::string source;
  std::string label;                    // its place in the lineage: "seed", "r2.i1.b3", ...
  const nlohmann::json* eval = nullptr; // its kforge.eval/1 document; null: not evaluated
  std::string profile;                  // a profiler digest shown with the evaluation; empty: none
};

/// An idea tried in an earlier round, for ideas.md's table.
struct idea_outcome {
  std::string idea;              // as proposed; the table shows its first line
  std::string outcome;           // "1.8x", "failed: tolerance", ...; empty: formatted from speedup
  std::optional<double> speedup; // over the reference, when it passed and was timed
};

/// An idea read back from an ideas.md answer.
struct idea {
  std::string title; // one line, markdown bold removed
  std::string body;  // the lines under it, dedented; may be empty
  /// @return "title\nbody" (just the title when there is no body): what implement_idea takes.
  [[nodiscard]] std::string text() const;
};

/// The problem as templates see it (problem.md): name, description, backend, dtype, tensors
/// with shapes, input distributions per case, tolerance, work counts and arithmetic
/// intensity, the device and, with ceilings, its copy bandwidth, peak FLOP/s at the dtype
/// and the roofline floor max(min_bytes / copy bandwidth, flops / peak), and the reference
/// source (read from p.reference).
/// @throws kforge::error when the reference cannot be read.
[[nodiscard]] nlohmann::json problem_context(const problem::problem& p,
                                             const std::optional<device::ceilings>& ceilings,
                                             std::string device_name);

/// A candidate as templates see it (candidate.md): source, label, the tunable parameters
/// and constraints it declares (`// kforge: param` / `// kforge: constraint` lines, as
/// written), and from `eval_doc` (kforge.eval/1, or null) its status and, when timed, its
/// timings against the reference, the baselines and the roofline.
[[nodiscard]] nlohmann::json candidate_context(std::string source, std::string label,
                                               const nlohmann::json* eval_doc);

/// An evaluation as templates see it (feedback.md): status and message; on a build failure
/// the compiler's output cut to `max_diagnostic_lines` lines (and how many more there
/// were); on a failed check its name, case, trial, output, worst element {index, got,
/// expected, reference} and error ratio against alpha; when timed, the timings (median of
/// candidate, reference and each baseline, speedup, roofline fraction and bound, GB/s,
/// GFLOP/s) and the candidate build's resources per kernel (registers, smem, spills).
[[nodiscard]] nlohmann::json feedback_context(const nlohmann::json& eval_doc, int max_diagnostic_lines = 60);

/// The dialect a candidate is written in, which picks the system prompt's rules:
/// "cpp" for a CPU problem; for CUDA, "cute" when `source_hint` includes <cute/...> or
/// <cutlass/...>, else "cuda".
[[nodiscard]] std::string dialect_for(const problem::problem& p, std::string_view source_hint);

/// Whether `d` is a dialect prompt_builder knows; whether it is one of the Python ones
/// (triton, torch-cuda), whose candidates are ModelNew files.
[[nodiscard]] bool is_dialect(std::string_view d);
[[nodiscard]] bool is_python_dialect(std::string_view d);

class prompt_builder {
public:
  /// @throws kforge::error (usage) when `templates_dir` is not a directory.
  explicit prompt_builder(std::filesystem::path templates_dir = default_prompts_dir(),
                          int max_diagnostic_lines = 60);

  /// Write a faster candidate than `current` (implement.md).
  [[nodiscard]] llm::request implement(const problem::problem& p, const device_facts& dev,
                                       const candidate_ref& current) const;
  /// `failed` failed its evaluation (which it must carry): fix it, attempt `attempt` of
  /// `max_attempts` (fix.md). @pre failed.eval, 1 <= attempt <= max_attempts.
  [[nodiscard]] llm::request fix(const problem::problem& p, const device_facts& dev, const candidate_ref& failed,
                                 int attempt, int max_attempts) const;
  /// Propose `n` distinct ideas to make `best` faster, given what was tried (ideas.md).
  /// Read the answer back with parse_ideas().
  [[nodiscard]] llm::request ideas(const problem::problem& p, const device_facts& dev, const candidate_ref& best,
                                   const std::vector<idea_outcome>& tried, int n) const;
  /// Implement `idea` (natural language) on `parent` (implement_idea.md).
  [[nodiscard]] llm::request implement_idea(const problem::problem& p, const device_facts& dev,
                                            const candidate_ref& parent, const std::string& idea) const;

  /// Every prompt asks for `dialect` ("cuda", "cute", "cpp", "triton", "torch-cuda"; empty:
  /// dialect_for() the problem and the candidate, the default). The Python dialects ask for a
  /// ModelNew file in a ```python fence. @throws kforge::error (usage) for another name.
  prompt_builder& use_dialect(std::string dialect);
  [[nodiscard]] const std::string& dialect() const { return m_dialect; }

  /// system.md rendered for a dialect ("cuda", "cute", "cpp", "triton", "torch-cuda").
  [[nodiscard]] std::string system_prompt(std::string_view dialect) const;
  [[nodiscard]] const template_set& templates() const { return m_templates; }

private:
  template_set m_templates;
  int m_max_diagnostic_lines;
  std::string m_dialect; // empty: per problem and candidate

  [[nodiscard]] nlohmann::json task_context(const problem::problem& p, const device_facts& dev,
                                            const candidate_ref& c) const;
  [[nodiscard]] llm::request make(const std::string& task, const nlohmann::json& ctx) const;
};

/// Reads the numbered list ideas.md asks for back into ideas, at most `max`. Items are
/// lines like "1. Title", "1) Title", "### 1. Title", "**1. Title**", "1. **Title**: text",
/// numbered 1, 2, 3, ... in order (a nested or out-of-sequence number stays in the body);
/// text before the first item and code fences are skipped. @return what it could read;
/// empty when there is no such list.
[[nodiscard]] std::vector<idea> parse_ideas(std::string_view answer, int max);

} // namespace kforge::propose
