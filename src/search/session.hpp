#pragma once
// One search run's shared machinery, which every strategy drives:
//   search::session s(db, problem, options, progress);            // a new run, or options.resume_run
//   auto o = s.evaluate({.source = src, .origin = "llm", .step = "implement", .round = 1});
//   auto r = s.ask("code", request);                               // an LLM call, metered and recorded
//   while (!s.stop_reason()) { ... s.end_round(improved); }
// It owns the evaluation scheduler (builds on all cores, one device lane per GPU), the
// result cache (a source already judged with the same settings on the same device model is
// not judged again), the budgets and stop rules, the best candidate so far, and the run's
// rows in the database. On resume (options.resume_run) it answers, from the database,
// every evaluation and LLM call the killed run had finished, in the order the strategy
// asks for them again, so the strategy re-runs its own decisions and nothing is lost or
// repeated. Thread-safe: strategies call evaluate() and ask() from several threads.
#include "llm/message.hpp"
#include "problem/problem.hpp"
#include "search/options.hpp"
#include "search/scheduler.hpp"
#include "worker/judge_keeper.hpp"
#include "store/store.hpp"

#include <nlohmann/json.hpp>

#include <atomic>
#include <chrono>
#include <functional>
#include <future>
#include <map>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <random>
#include <string>
#include <vector>

namespace kforge::search {

/// What a strategy hands in to be judged.
struct proposal {
  std::string source;
  std::string origin = "llm";        // "seed", "llm", "tuner", ...
  std::string label;                 // short, for tables ("r2 idea 3 #1", "tune BLOCK=128")
  std::optional<int64_t> parent_id;  // candidate it derives from
  std::string step = "implement";    // "seed", "tune", "implement", "fix", "idea"
  int round = 0;
  std::optional<int64_t> idea_id;
  nlohmann::json params = nlohmann::json::object(); // the tuned assignment, when instantiated
};

/// What came back.
struct outcome {
  int64_t candidate_id = 0;
  int64_t evaluation_id = 0;  // 0 when not run (budget exhausted)
  std::string status;         // "passed", a failing check's name, or "not_run"
  std::string message;
  bool reused = false;        // answered from an earlier evaluation of the same source
  std::optional<double> median_s, reference_median_s, speedup, roofline_fraction;
  std::string source, label;
  nlohmann::json doc;         // the kforge.eval/1 document
  [[nodiscard]] bool passed() const { return status == "passed" && median_s.has_value(); }
};

/// Called from any thread with one event (the `kforge.optimize-event/1` JSON of
/// docs/json.md): "run", "evaluation", "round", "idea", "llm_call", "best", "stopped".
using event_sink = std::function<void(const nlohmann::json&)>;

/// Asks an LLM on the session's behalf: picks the role's model, meters, records. Made by
/// the caller (cli) from the configuration; absent when no LLM is configured.
class llm_gateway {
public:
  virtual ~llm_gateway() = default;
  /// @return the answer; the call's database row id in *call_id. @throws llm::error.
  virtual llm::response ask(const std::string& role, llm::request req, std::optional<int64_t> run_id,
                            int64_t* call_id) = 0;
  /// Tokens and cost spent through this gateway in this process.
  [[nodiscard]] virtual nlohmann::json totals() const = 0;
  /// Where "llm_progress" events go (calls streaming, tokens so far, tokens/s), at most
  /// about once a second; the session sets its own event sink.
  virtual void set_event_sink(event_sink) {}
};

class session {
public:
  /// Starts the run (a new row) or resumes options.resume_run.
  /// @throws kforge::error (usage) when the resumed run does not exist or is of another problem.
  session(store::store& db, const problem::problem& p, search_options opts, event_sink events = {},
          std::shared_ptr<llm_gateway> llm = {});
  ~session();

  [[nodiscard]] int64_t run_id() const { return m_run_id; }
  [[nodiscard]] const problem::problem& problem() const { return m_problem; }
  [[nodiscard]] const search_options& options() const { return m_opts; }
  [[nodiscard]] store::store& db() { return m_db; }
  [[nodiscard]] bool has_llm() const { return static_cast<bool>(m_llm); }
  /// The device model every lane has ("NVIDIA H200 (sm_90, ...)"; the CPU's model).
  [[nodiscard]] const std::string& device_model() const { return m_device_model; }
  [[nodiscard]] std::mt19937_64& rng() { return m_rng; } // the strategy's: seeded from options.seed

  /// Stores a source without judging it (a template whose instances are judged). @return its candidate id.
  int64_t put_candidate(const proposal& prop);
  /// Judges one proposal (blocking). Never throws for a bad candidate; a broken problem
  /// throws kforge::error. Status "not_run" once the evaluation budget is spent.
  outcome evaluate(const proposal& prop);
  /// Judges several at once (builds in parallel, devices in parallel); results in order.
  std::vector<outcome> evaluate_all(const std::vector<proposal>& props);

  /// One LLM call; on resume, a call the run already made (same replay_key) is answered
  /// from the database. @throws llm::error (including kind budget).
  llm::response ask(const std::string& role, const llm::request& req, int64_t* call_id = nullptr);

  /// The profile digest of an outcome's candidate, for a prompt: one call under Nsight
  /// Compute on a device lane, stored (profiles table) and cached per candidate. "" when
  /// it cannot be had (a CPU problem, no ncu, no permission for counters): the reason is
  /// recorded and emitted, and the search goes on with timings only.
  std::string profile_digest(const outcome& o);

  /// Records an idea (resume: the same idea of the same round is found, not added again).
  int64_t put_idea(int round, const std::string& title, const std::string& body, std::optional<int64_t> call_id);
  /// Records a proposal's fate ("ok", "malformed", "llm_error").
  void put_proposal(store::proposal_record p);

  /// Ends a round: counts rounds without gain and emits the round's progress line.
  void end_round(int round, const std::string& note = "");
  /// Why the run must stop now, or nullopt: budgets (evaluations, tokens, cost, wall
  /// time), the roofline target, rounds without gain, max rounds.
  [[nodiscard]] std::optional<std::string> stop_reason() const;
  /// Marks the run finished with the reason (or "done: the strategy finished").
  void finish(const std::string& reason);
  /// Marks it failed (an exception escaped the strategy).
  void fail(const std::string& reason);

  [[nodiscard]] std::optional<outcome> best() const;
  [[nodiscard]] int evaluations_used() const { return m_evaluations.load(); }
  [[nodiscard]] const scheduler& lanes() const { return *m_scheduler; }
  /// The seed's outcome the run started from (the baseline for "gain").
  void emit(nlohmann::json event) const;

private:
  outcome finish_outcome(const proposal& prop, int64_t candidate_id, int64_t evaluation_id, bool reused);
  void consider_best(outcome& o);
  /// Runs compute-sanitizer on a best not yet accepted; accepts it, or goes back to the last
  /// accepted best. At the end of every round and of the search.
  void confirm_best();
  void accept_best_locked(); // m_mu held

  std::filesystem::path source_path(const std::string& source) const;

  store::store& m_db;
  const problem::problem& m_problem;
  search_options m_opts;
  event_sink m_events;
  std::shared_ptr<llm_gateway> m_llm;
  int64_t m_run_id = 0;
  int64_t m_problem_id = 0;
  std::string m_device_model;
  // Before the scheduler: its evaluations end before the judges they kept do.
  std::shared_ptr<worker::judge_keeper> m_judges = std::make_shared<worker::judge_keeper>();
  std::unique_ptr<scheduler> m_scheduler;
  std::mt19937_64 m_rng;
  std::chrono::steady_clock::time_point m_started;
  double m_prior_wall_s = 0; // wall time of the run before this resume

  mutable std::mutex m_mu;
  std::atomic<int> m_evaluations{0};
  std::optional<outcome> m_best;           // the fastest that passed; provisional until m_best_confirmed
  std::optional<outcome> m_confirmed_best; // the last best accepted (sanitized where that applies)
  bool m_best_confirmed = true;
  int m_rounds = 0, m_rounds_without_gain = 0;
  bool m_gain_this_round = false;
  // resume: what the killed run had finished, consumed as the strategy asks again
  std::map<int64_t, std::deque<store::run_evaluation_record>> m_prior_evals; // by candidate id
  std::map<std::string, std::deque<store::llm_call_record>> m_prior_calls;  // by replay_key
  std::map<std::pair<int, std::string>, std::deque<int64_t>> m_prior_ideas; // (round, title) -> id
  std::vector<store::proposal_record> m_prior_proposals;
  std::map<int64_t, std::string> m_profiles; // candidate id -> digest text ("" when it failed)
};

/// Waits for every one of `futures` (so none outlives what its task refers to), then
/// rethrows the first error, if any. @return the outcomes in order.
std::vector<outcome> wait_all(std::vector<std::future<outcome>>& futures);

} // namespace kforge::search
