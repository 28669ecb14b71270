#pragma once
// The experiment record: one SQLite file holding problems, candidates, builds and
// evaluations (every check and every timing summary). Writes commit as they happen
// (WAL mode), so a run killed mid-way keeps everything it had finished. An evaluation
// is "running" while the kforge process that began it lives; once that process is gone
// (killed, crashed, the machine restarted) the next open marks it "interrupted".
// Every text written is scrubbed of secret values (core/text.hpp scrub_secrets) except a
// candidate's source, which is kept byte-exact (a BLOB: any bytes, UTF-8 or not).
//   store::store db{"kforge.db"};
//   auto pid = db.put_problem(...);  auto cid = db.put_candidate(pid, src, "file");
//   auto eid = db.begin_evaluation(cid, bid, cfg);  db.put_check(eid, ...);  db.finish_evaluation(eid, ...);
// The schema is versioned with PRAGMA user_version and migrated forward on open.
// This module is a leaf: it knows nothing of eval's types, only these records.
#include "core/process_owner.hpp"

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

struct sqlite3;

namespace kforge::store {

struct problem_record {
  std::string name;
  std::string path;      // directory it was loaded from
  std::string spec_hash; // sha256 of problem.toml + reference source
  std::string spec_toml;
};

struct candidate_record {
  int64_t id = 0;
  int64_t problem_id = 0;
  std::string hash;   // sha256 of the source
  std::string source; // byte-exact, as the file held it (it need not be UTF-8)
  std::string origin; // "file", "seed", "reference", "llm", "tuner", "agent", ...
  std::string label;  // e.g. the file name it came from
  std::optional<int64_t> parent_id;
  std::string created_at; // ISO-8601 UTC
};

struct build_record {
  int64_t id = 0;
  int64_t candidate_id = 0;
  std::string role;     // "candidate", "reference", "oracle"
  std::string compiler; // compiler identity (first line of --version)
  std::string flags;    // the full command line
  std::string cache_key;
  bool ok = false;
  bool cached = false;  // served from the build cache
  std::string diagnostics;
  double duration_s = 0.0;
  std::string created_at;
  std::string resources_json = "[]"; // nvcc: per kernel registers, smem_bytes, stack_bytes, spill_*_bytes
  std::string sha256;     // of the artifact (kernel.so, kernel.cubin) as built and checked; empty when none
  std::string cache_note; // why a cached entry was not used as is (e.g. its sha256 did not match); else empty
};

struct check_record {
  std::string name;      // e.g. "tolerance", "guard", "inputs_unchanged", "repeat", "nan_positions"
  std::string case_name; // input distribution, empty when not per-case
  int trial = -1;
  bool passed = false;
  std::string detail_json; // what failed: element, value, expected, ...
};

struct timing_record {
  std::string subject; // "candidate", "reference", or a baseline's name
  int samples = 0;
  double median_s = 0, mean_s = 0, min_s = 0, max_s = 0, stdev_s = 0;
  double ci_rel = 0; // half-width of the median's 95% CI over the median
  double p10_s = 0, p90_s = 0;
};

struct evaluation_record {
  int64_t id = 0;
  int64_t candidate_id = 0;
  std::optional<int64_t> build_id;
  std::string status;  // "running", "interrupted", "cancelled", "passed", "build_failed", "crashed", "timeout", "error", ...
  std::string message; // one line a user can act on
  std::string config_json;
  std::string summary_json; // the full result as `kforge eval --json` prints it
  std::string started_at, finished_at;
  std::vector<check_record> checks;
  std::vector<timing_record> timings;
};

/// One `kforge optimize`: its configuration, where it stands, and its best so far.
struct run_record {
  int64_t id = 0;
  int64_t problem_id = 0;
  std::string problem;     // name (joined)
  std::string problem_path;
  std::string strategy;    // "tune", "refine", "branch"
  std::string config_json; // everything needed to resume it (strategy options, budgets, seed, models)
  std::string status;      // "running", "finished", "failed", "interrupted" (its kforge was killed)
  std::string stop_reason; // one line: "budget: 40 evaluations", "target: 0.8 of the roofline", ...
  std::optional<int64_t> best_candidate_id, best_evaluation_id;
  int resumes = 0;
  std::string started_at, finished_at;
  std::string owner; // the process running it (core/process_owner.hpp); "" before schema 7
};

/// One evaluation a run made or reused, in run order.
struct run_evaluation_record {
  int64_t id = 0;
  int64_t run_id = 0;
  int64_t evaluation_id = 0;
  int64_t candidate_id = 0;
  int round = 0;
  std::string step;            // "seed", "tune", "implement", "fix", "idea"
  std::optional<int64_t> idea_id;
  std::string params_json = "{}"; // the tuned parameter assignment, when the candidate was instantiated
  bool reused = false;         // the result of an earlier evaluation of the same source (not run again)
  std::string created_at;
  // joined from the evaluation and candidate (read only)
  std::string status, message, candidate_label, candidate_origin;
  std::optional<int64_t> parent_id;
  std::optional<double> candidate_median_s, reference_median_s;
  int device_index = -1;
};

struct idea_record {
  int64_t id = 0;
  int64_t run_id = 0;
  int round = 0;
  std::string title, body;
  std::optional<int64_t> llm_call_id;
  std::string created_at;
};

/// One LLM call, as asked and answered (never an API key: the request is llm::to_json's).
struct llm_call_record {
  int64_t id = 0;
  std::optional<int64_t> run_id;
  std::string role, provider, model, replay_key, request_hash, request_json;
  std::string response_text, stop_reason, response_id;
  int64_t input_tokens = 0, output_tokens = 0, cached_input_tokens = 0, cache_write_tokens = 0;
  std::optional<double> cost_usd; // nullopt: the model has no price in the configuration
  double duration_s = 0;
  std::string error_kind, error_message; // empty on success
  std::string started_at;
  std::string usage_source = "reported"; // or "estimated": the server sent no token counts
};

struct llm_totals {
  int64_t calls = 0, failed_calls = 0;
  int64_t input_tokens = 0, output_tokens = 0, cached_input_tokens = 0;
  double cost_usd = 0;
  int64_t unpriced_calls = 0; // calls whose cost is unknown (no price configured)
  int64_t estimated_calls = 0; // calls whose tokens were estimated (the server sent none)
};

/// What came of one LLM answer: a candidate, or why none ("malformed": no usable code).
struct proposal_record {
  int64_t id = 0;
  int64_t run_id = 0;
  int round = 0;
  std::string step;
  std::optional<int64_t> llm_call_id, parent_candidate_id, idea_id;
  std::string status; // "ok", "malformed", "llm_error"
  std::string error;
  std::optional<int64_t> candidate_id;
  std::string notes_json = "[]";
  std::string created_at;
};

/// A profile of a candidate (kforge profile): the digest, or why there is none.
struct profile_record {
  int64_t id = 0;
  int64_t candidate_id = 0;
  std::optional<int64_t> evaluation_id; // the evaluation it explains, when there is one
  std::string device;
  bool ok = false;
  std::string failure;          // why there are no counters, when !ok
  std::string digest_json = "{}";
  std::string digest_text;      // what a prompt quotes
  std::string created_at;
};

/// One line of the experiment log (kforge log): an evaluation with what it set out to test.
struct experiment_row {
  int64_t evaluation_id = 0;
  std::string problem;
  int64_t candidate_id = 0;
  std::string label, origin, status, message;
  std::string hypothesis;            // empty when none was given
  std::optional<double> predicted_s; // the time the experimenter predicted
  bool kept = false;                 // it became the problem's best when it finished
  std::optional<double> median_s, reference_median_s;
  std::string started_at;
};

/// A listed evaluation with the names a table needs.
struct evaluation_summary {
  int64_t id = 0;
  std::string problem;
  int64_t candidate_id = 0;
  std::string candidate_label;
  std::string candidate_hash;
  std::string status;
  std::string message;
  std::optional<double> candidate_median_s, reference_median_s;
  std::string started_at;
};

class store {
public:
  /// Opens (creating if needed), migrates, and marks the evaluations of dead kforge
  /// processes interrupted. @throws kforge::error (store) naming the file.
  explicit store(const std::filesystem::path& db_path);
  ~store();
  store(const store&) = delete;
  store& operator=(const store&) = delete;

  [[nodiscard]] int schema_version() const;
  static constexpr int latest_schema_version = 7;

  /// Every "running" evaluation or run whose owner (the process that began it) is known to
  /// be gone becomes "interrupted", with a message saying so; rows of live owners, of owners
  /// on another host or in another PID namespace, and rows older than the owner column are
  /// left alone. Runs on open. @return how many rows it marked.
  int mark_interrupted_evaluations();
  /// Every evaluation and run of `owner` still "running" (or already marked "interrupted")
  /// becomes "cancelled" with "cancelled: <reason>": work a client gave up on, whose process
  /// the caller has ended. @return how many rows it marked.
  int mark_cancelled(const process_owner& owner, const std::string& reason);

  /// Idempotent on (name, spec_hash). @return the problem id.
  int64_t put_problem(const problem_record& p);
  /// Idempotent on (problem_id, hash): the same source twice is one candidate, keeping its
  /// first origin and label; a parent given later fills one it lacked. @return its id.
  int64_t put_candidate(int64_t problem_id, const std::string& source, const std::string& origin,
                        const std::string& label, std::optional<int64_t> parent_id = std::nullopt);
  [[nodiscard]] std::optional<candidate_record> get_candidate(int64_t id) const;

  int64_t put_build(const build_record& b);
  [[nodiscard]] std::vector<build_record> builds_of(int64_t candidate_id) const;

  /// Opens an evaluation "running", owned by the calling process (core/process_owner.hpp).
  int64_t begin_evaluation(int64_t candidate_id, std::optional<int64_t> build_id, const std::string& config_json);
  void put_check(int64_t evaluation_id, const check_record& c);
  void put_timing(int64_t evaluation_id, const timing_record& t);
  void finish_evaluation(int64_t evaluation_id, const std::string& status, const std::string& message,
                         const std::string& summary_json, int device_index = -1, const std::string& device = "");
  /// The experiment log's fields of an evaluation.
  void set_experiment(int64_t evaluation_id, const std::string& hypothesis, std::optional<double> predicted_s);
  void set_kept(int64_t evaluation_id, bool kept);
  /// The fastest passing candidate median of a problem so far.
  [[nodiscard]] std::optional<double> best_median(int64_t problem_id) const;
  /// Oldest first; `problem` filters by name when non-empty; controls are left out; the
  /// newest `limit` rows (<= 0: all).
  [[nodiscard]] std::vector<experiment_row> experiment_log(const std::string& problem = "", int limit = 0) const;
  /// Overrides a finished evaluation's verdict (a check that ran after it, e.g. compute-sanitizer on a new best).
  void set_evaluation_status(int64_t evaluation_id, const std::string& status, const std::string& message);
  /// The latest finished evaluation of this candidate on this device model whose
  /// config_json equals `config_json` (the search's result cache). Statuses "running",
  /// "interrupted", "cancelled" and "error" never count.
  [[nodiscard]] std::optional<int64_t> find_evaluation(int64_t candidate_id, const std::string& device_model,
                                                       const std::string& config_json) const;
  [[nodiscard]] std::optional<int64_t> find_problem(const std::string& name, const std::string& spec_hash) const;

  // --- runs (kforge optimize) ---
  int64_t begin_run(int64_t problem_id, const std::string& strategy, const std::string& config_json);
  void finish_run(int64_t run_id, const std::string& status, const std::string& stop_reason);
  void set_run_best(int64_t run_id, int64_t candidate_id, int64_t evaluation_id);
  /// Marks a run running again (kforge optimize --resume) and counts the resume.
  void resume_run(int64_t run_id);
  [[nodiscard]] std::optional<run_record> get_run(int64_t run_id) const;
  /// Newest first; `limit` <= 0 lists all.
  [[nodiscard]] std::vector<run_record> list_runs(int limit = 20) const;
  int64_t put_run_evaluation(const run_evaluation_record& r);
  [[nodiscard]] std::vector<run_evaluation_record> run_evaluations(int64_t run_id) const;
  int64_t put_idea(const idea_record& i);
  [[nodiscard]] std::vector<idea_record> ideas_of(int64_t run_id) const;
  int64_t put_llm_call(const llm_call_record& c);
  [[nodiscard]] std::vector<llm_call_record> llm_calls_of(int64_t run_id) const;
  [[nodiscard]] llm_totals llm_totals_of(int64_t run_id) const;
  int64_t put_profile(const profile_record& r);
  [[nodiscard]] std::optional<profile_record> latest_profile(int64_t candidate_id) const;
  int64_t put_proposal(const proposal_record& p);
  [[nodiscard]] std::vector<proposal_record> proposals_of(int64_t run_id) const;

  [[nodiscard]] std::optional<evaluation_record> get_evaluation(int64_t id) const;
  /// Newest first; `problem` filters by problem name when non-empty; `limit` <= 0 lists all.
  [[nodiscard]] std::vector<evaluation_summary> list_evaluations(const std::string& problem = "", int limit = 20) const;

private:
  void migrate();
  sqlite3* m_db = nullptr;
  std::filesystem::path m_path;
};

} // namespace kforge::store
