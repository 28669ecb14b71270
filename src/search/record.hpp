#pragma once
// Runs one evaluation and records it in the store as it goes: the evaluation row is
// opened first ("running"), each build, check and timing is written the moment it
// completes, and the row is closed with the verdict and the device that measured it.
// A killed kforge leaves every finished piece in the database.
//   auto r = search::evaluate_and_record(db, p, "my_kernel.cu", {.origin = "file"}, opts);
#include "llm/config.hpp"
#include "problem/problem.hpp"
#include "store/store.hpp"
#include "worker/evaluate.hpp"

#include <map>
#include <optional>
#include <string>

namespace kforge::search {

struct recorded_evaluation {
  worker::evaluation result;
  nlohmann::json json; // to_json(result) plus ids
  int64_t evaluation_id = 0;
  int64_t candidate_id = 0;
};

/// Where a candidate came from, as the candidates table keeps it.
struct provenance {
  std::string origin = "file";       // "file", "seed", "reference", "llm", "tuner", "control:NAME", ...
  std::string label;                 // empty: the file name
  std::optional<int64_t> parent_id;  // the candidate it was derived from
  std::string hypothesis;            // what this experiment tests (the experiment log)
  std::optional<double> predicted_s; // the time predicted for it
  std::map<std::string, int64_t> params; // values for declared parameters (the rest at their defaults)
};

/// Treats the API-key variables `cfg` names (every model's key_env) as secrets from now on
/// (core/text.hpp add_secret_variable), whatever their names: what a candidate prints is
/// scrubbed of their values before it is stored or shown.
void protect_llm_keys(const llm::llm_config& cfg);

/// The problem's row (inserted on first use): name + hash of problem.toml and the reference.
int64_t problem_id(store::store& db, const problem::problem& p);

/// The configuration an evaluation is recorded with; two evaluations with equal configs
/// (and the same candidate and device model) are interchangeable (the search's cache).
[[nodiscard]] nlohmann::json evaluation_config(const problem::problem& p, const std::filesystem::path& candidate,
                                               const worker::evaluate_options& opts);

/// A candidate that declares tunable parameters (build/params.hpp) is judged at its
/// declared defaults. Everything recorded and returned is scrubbed of secrets; the first
/// call in a process also protects the keys of the LLM config found by default
/// ($KFORGE_CONFIG or ./kforge.toml; one that does not load is left to the commands that use it). @throws kforge::error (build) for a malformed declaration.
/// @throws kforge::error when the problem is broken (the row is closed with status "error" first).
[[nodiscard]] recorded_evaluation evaluate_and_record(store::store& db, const problem::problem& p,
                                                      const std::filesystem::path& candidate, const provenance& from,
                                                      worker::evaluate_options opts);

} // namespace kforge::search
