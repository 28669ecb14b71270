#pragma once
// Everything a search run is configured with. Stored as the run's config_json, so
// `kforge optimize --resume RUN` continues with exactly these settings.
#include <nlohmann/json.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace kforge::search {

struct search_options {
  std::string strategy = "tune";   // "tune", "refine", "branch", "evolve"
  std::uint64_t seed = 0;          // the strategy's random choices (0: drawn at start, then stored)
  std::optional<int64_t> resume_run;

  // Budgets and stop rules (0: no limit).
  int max_evaluations = 40;
  int64_t max_tokens = 0;
  double max_cost_usd = 0;
  double max_wall_s = 0;
  double target_fraction = 0;      // stop once the best reaches this fraction of the roofline
  int patience = 3;                // stop after this many rounds without gain
  int max_rounds = 8;

  // tune
  std::string tune_method = "auto"; // "grid", "random", "model", "auto" (grid when the space fits the budget)
  int tune_budget = 12;             // evaluations per tuned template inside refine/branch

  // refine (CuTeGen): fixes per failed candidate; profile digests withheld before this depth
  int max_fixes = 3;
  int profile_depth = 3;

  // branch (Stanford CRFM)
  int ideas = 4;          // N ideas per round
  int implementations = 2; // B implementations of each idea, in parallel
  int keep = 2;           // the best K seed the next round

  // evolve (islands, a MAP-Elites archive per island); children per island per round: implementations
  int islands = 2;
  int migrate_every = 3;  // rounds between migrations of each island's best to the next

  // evaluation
  int devices = 0;        // device lanes; 0: every visible GPU (CPU problems: 1)
  int build_jobs = 0;     // 0: the CPU count
  int trials = 0;         // trials per case; 0: the problem's
  double time_budget_s = 0; // timing seconds per subject; 0: the problem's
  bool sanitize_best = true; // compute-sanitizer on every new best (CUDA problems)
  std::vector<std::string> llm; // the models (specs) the run was started with, for the record
  std::string dialect;    // what the LLM writes: cuda, cute, cpp, triton, torch-cuda; empty: per problem

  [[nodiscard]] nlohmann::json to_json() const;
  /// Unknown keys are ignored (a newer kforge's run), missing ones keep their defaults.
  [[nodiscard]] static search_options from_json(const nlohmann::json& j);
};

} // namespace kforge::search
