#pragma once
// The search strategies, each a small module over one session (search/session.hpp):
// propose candidates, have the session judge them, keep the best, stop when the session
// says so. A strategy's whole loop, in miniature:
//
//   void run(session& s) override {
//     auto parent = start(s);                          // the seed, tuned if it declares params
//     for (int round = 1; !s.stop_reason(); ++round) {
//       auto req = prompts.implement(...);  req.replay_key = fmt::format("refine/r{}", round);
//       auto answer = s.ask("code", req);              // metered, recorded, replayable
//       auto cand = propose::extract_candidate(answer.text, parent.source, ...);
//       auto o = tune_or_evaluate(s, cand, ...);       // every declared parameter is tuned first
//       s.end_round(round);
//     }
//   }
//
// Strategies make their random choices with s.rng() and name their LLM calls with stable
// replay keys, so a run replays (llm::replay) and resumes (session) deterministically.
//   tune    search/tune.cpp    parameters the seed declares (no LLM needed)
//   refine  search/refine.cpp  one lineage; failures fed back for up to max_fixes fixes (CuTeGen)
//   branch  search/branch.cpp  N ideas per round, B implementations each, best K seed the next (CRFM)
//   evolve  search/evolve.cpp  islands of MAP-Elites archives, B children per island a round, ring migration
#include "propose/prompt.hpp"
#include "search/session.hpp"

#include <memory>
#include <string>

namespace kforge::search {

class strategy {
public:
  virtual ~strategy() = default;
  /// Runs until done or until the session gives a stop reason. May throw (a broken
  /// problem, an LLM error it cannot work around); run_search records it.
  virtual void run(session& s) = 0;
};

/// @throws kforge::error (usage) for an unknown name, listing the known ones.
[[nodiscard]] std::unique_ptr<strategy> make_strategy(const std::string& name);

/// Runs the strategy and closes the run: "finished" with the stop reason, or "failed"
/// with the error (which is rethrown).
void run_search(session& s, strategy& st);

// --- steps the strategies share (search/tune.cpp) ---

/// Judges `prop`: when its source declares tunable parameters, searches them first (at
/// most `budget` evaluations, method "grid", "random", "model" or "auto") and returns the
/// best instance (or the first failure when none passed). A malformed declaration comes
/// back as status "invalid_params" with the parse error.
outcome tune_or_evaluate(session& s, const proposal& prop, int budget, const std::string& method);

/// One LLM proposal, end to end: ask `role` (the request's replay_key names the call),
/// extract the candidate from the answer (whole file or edits against `parent`), record
/// the proposal (a malformed answer or a failed call is a recorded failed proposal, not an
/// exception), then tune_or_evaluate it. Status "malformed" / "llm_error" when no candidate
/// came of it. @throws llm::error only of kind budget (the run must stop).
outcome propose_and_judge(session& s, const llm::request& req, const std::string& role, const outcome* parent,
                          const std::string& step, int round, std::optional<int64_t> idea_id, const std::string& label);

/// The device facts prompts quote: its model and calibrated ceilings (when calibrated).
[[nodiscard]] propose::device_facts device_facts_of(const session& s);
/// The prompt context of an outcome (its source, label and evaluation document).
[[nodiscard]] propose::candidate_ref ref_of(const outcome& o);

/// The run's starting point: the problem's seed (or its reference when it has none),
/// tuned when it declares parameters.
outcome start_from_seed(session& s, int budget);

} // namespace kforge::search
