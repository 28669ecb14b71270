#include "store/store.hpp"

#include "core/error.hpp"
#include "core/hash.hpp"
#include "core/process_owner.hpp"
#include "core/text.hpp"

#include <sqlite3.h>

#include <algorithm>
#include <array>
#include <map>
#include <string_view>
#include <thread>
#include <chrono>
#include <system_error>
#include <utility>

namespace kforge::store {

namespace {

// ---------------------------------------------------------------------------------
// Schema migrations. Entry i takes a database from user_version i to i + 1; each runs
// in its own transaction together with the user_version bump. To change the schema,
// append one entry here and raise store::latest_schema_version to match.
// Timestamps are ISO-8601 UTC with milliseconds (strftime's %f is SS.SSS).
// ---------------------------------------------------------------------------------
#define KFORGE_NOW "(strftime('%Y-%m-%dT%H:%M:%fZ','now'))"

constexpr std::array<std::string_view, 7> migrations{
    // 1: the initial schema.
    R"sql(
CREATE TABLE problems (
  id         INTEGER PRIMARY KEY,
  name       TEXT NOT NULL,
  path       TEXT NOT NULL,
  spec_hash  TEXT NOT NULL,
  spec_toml  TEXT NOT NULL,
  created_at TEXT NOT NULL DEFAULT )sql" KFORGE_NOW R"sql(,
  UNIQUE (name, spec_hash)
);

CREATE TABLE candidates (
  id         INTEGER PRIMARY KEY,
  problem_id INTEGER NOT NULL REFERENCES problems(id),
  hash       TEXT NOT NULL,
  source     TEXT NOT NULL,
  origin     TEXT NOT NULL,
  label      TEXT NOT NULL,
  parent_id  INTEGER REFERENCES candidates(id),
  created_at TEXT NOT NULL DEFAULT )sql" KFORGE_NOW R"sql(,
  UNIQUE (problem_id, hash)
);
CREATE INDEX candidates_parent ON candidates(parent_id);

CREATE TABLE builds (
  id           INTEGER PRIMARY KEY,
  candidate_id INTEGER NOT NULL REFERENCES candidates(id),
  role         TEXT NOT NULL,
  compiler     TEXT NOT NULL,
  flags        TEXT NOT NULL,
  cache_key    TEXT NOT NULL,
  ok           INTEGER NOT NULL CHECK (ok IN (0, 1)),
  cached       INTEGER NOT NULL CHECK (cached IN (0, 1)),
  diagnostics  TEXT NOT NULL,
  duration_s   REAL NOT NULL,
  created_at   TEXT NOT NULL DEFAULT )sql" KFORGE_NOW R"sql(
);
CREATE INDEX builds_candidate ON builds(candidate_id);

CREATE TABLE evaluations (
  id           INTEGER PRIMARY KEY,
  candidate_id INTEGER NOT NULL REFERENCES candidates(id),
  build_id     INTEGER REFERENCES builds(id),
  status       TEXT NOT NULL DEFAULT 'running',
  message      TEXT NOT NULL DEFAULT '',
  config_json  TEXT NOT NULL,
  summary_json TEXT NOT NULL DEFAULT '',
  started_at   TEXT NOT NULL DEFAULT )sql" KFORGE_NOW R"sql(,
  finished_at  TEXT
);
CREATE INDEX evaluations_candidate ON evaluations(candidate_id);

CREATE TABLE checks (
  id            INTEGER PRIMARY KEY,
  evaluation_id INTEGER NOT NULL REFERENCES evaluations(id),
  name          TEXT NOT NULL,
  case_name     TEXT NOT NULL,
  trial         INTEGER NOT NULL,
  passed        INTEGER NOT NULL CHECK (passed IN (0, 1)),
  detail_json   TEXT NOT NULL
);
CREATE INDEX checks_evaluation ON checks(evaluation_id);

CREATE TABLE timings (
  id            INTEGER PRIMARY KEY,
  evaluation_id INTEGER NOT NULL REFERENCES evaluations(id),
  subject       TEXT NOT NULL,
  samples       INTEGER NOT NULL,
  median_s      REAL NOT NULL,
  mean_s        REAL NOT NULL,
  min_s         REAL NOT NULL,
  max_s         REAL NOT NULL,
  stdev_s       REAL NOT NULL,
  ci_rel        REAL NOT NULL,
  p10_s         REAL NOT NULL,
  p90_s         REAL NOT NULL
);
CREATE INDEX timings_evaluation ON timings(evaluation_id);
)sql",
    // 2: the compiler's per-kernel resource report (registers, shared memory, stack, spills).
    R"sql(
ALTER TABLE builds ADD COLUMN resources_json TEXT NOT NULL DEFAULT '[]';
)sql",
    // 3: searches. A run is one `kforge optimize`; run_evaluations lists every evaluation
    // it made or reused, in order (what resume replays); ideas, LLM calls and proposals
    // are what it asked and got; evaluations record the device that measured them.
    R"sql(
ALTER TABLE evaluations ADD COLUMN device_index INTEGER NOT NULL DEFAULT -1;
ALTER TABLE evaluations ADD COLUMN device TEXT NOT NULL DEFAULT '';

CREATE TABLE runs (
  id                 INTEGER PRIMARY KEY,
  problem_id         INTEGER NOT NULL REFERENCES problems(id),
  strategy           TEXT NOT NULL,
  config_json        TEXT NOT NULL,
  status             TEXT NOT NULL DEFAULT 'running',
  stop_reason        TEXT NOT NULL DEFAULT '',
  best_candidate_id  INTEGER REFERENCES candidates(id),
  best_evaluation_id INTEGER REFERENCES evaluations(id),
  resumes            INTEGER NOT NULL DEFAULT 0,
  started_at         TEXT NOT NULL DEFAULT )sql" KFORGE_NOW R"sql(,
  finished_at        TEXT
);

CREATE TABLE ideas (
  id          INTEGER PRIMARY KEY,
  run_id      INTEGER NOT NULL REFERENCES runs(id),
  round       INTEGER NOT NULL,
  title       TEXT NOT NULL,
  body        TEXT NOT NULL,
  llm_call_id INTEGER,
  created_at  TEXT NOT NULL DEFAULT )sql" KFORGE_NOW R"sql(
);
CREATE INDEX ideas_run ON ideas(run_id);

CREATE TABLE run_evaluations (
  id            INTEGER PRIMARY KEY,
  run_id        INTEGER NOT NULL REFERENCES runs(id),
  evaluation_id INTEGER NOT NULL REFERENCES evaluations(id),
  candidate_id  INTEGER NOT NULL REFERENCES candidates(id),
  round         INTEGER NOT NULL,
  step          TEXT NOT NULL,
  idea_id       INTEGER REFERENCES ideas(id),
  params_json   TEXT NOT NULL DEFAULT '{}',
  reused        INTEGER NOT NULL DEFAULT 0 CHECK (reused IN (0, 1)),
  created_at    TEXT NOT NULL DEFAULT )sql" KFORGE_NOW R"sql(
);
CREATE INDEX run_evaluations_run ON run_evaluations(run_id);

CREATE TABLE llm_calls (
  id                  INTEGER PRIMARY KEY,
  run_id              INTEGER REFERENCES runs(id),
  role                TEXT NOT NULL,
  provider            TEXT NOT NULL,
  model               TEXT NOT NULL,
  replay_key          TEXT NOT NULL,
  request_hash        TEXT NOT NULL,
  request_json        TEXT NOT NULL,
  response_text       TEXT NOT NULL,
  stop_reason         TEXT NOT NULL,
  response_id         TEXT NOT NULL,
  input_tokens        INTEGER NOT NULL,
  output_tokens       INTEGER NOT NULL,
  cached_input_tokens INTEGER NOT NULL,
  cache_write_tokens  INTEGER NOT NULL,
  cost_usd            REAL,
  duration_s          REAL NOT NULL,
  error_kind          TEXT NOT NULL,
  error_message       TEXT NOT NULL,
  started_at          TEXT NOT NULL
);
CREATE INDEX llm_calls_run ON llm_calls(run_id);

CREATE TABLE proposals (
  id                  INTEGER PRIMARY KEY,
  run_id              INTEGER NOT NULL REFERENCES runs(id),
  round               INTEGER NOT NULL,
  step                TEXT NOT NULL,
  llm_call_id         INTEGER REFERENCES llm_calls(id),
  parent_candidate_id INTEGER REFERENCES candidates(id),
  idea_id             INTEGER REFERENCES ideas(id),
  status              TEXT NOT NULL,
  error               TEXT NOT NULL,
  candidate_id        INTEGER REFERENCES candidates(id),
  notes_json          TEXT NOT NULL DEFAULT '[]',
  created_at          TEXT NOT NULL DEFAULT )sql" KFORGE_NOW R"sql(
);
CREATE INDEX proposals_run ON proposals(run_id);
)sql",
    // 4: profiles (kforge profile, and the digests a search put in its prompts).
    R"sql(
CREATE TABLE profiles (
  id            INTEGER PRIMARY KEY,
  candidate_id  INTEGER NOT NULL REFERENCES candidates(id),
  evaluation_id INTEGER REFERENCES evaluations(id),
  device        TEXT NOT NULL,
  ok            INTEGER NOT NULL CHECK (ok IN (0, 1)),
  failure       TEXT NOT NULL,
  digest_json   TEXT NOT NULL,
  digest_text   TEXT NOT NULL,
  created_at    TEXT NOT NULL DEFAULT )sql" KFORGE_NOW R"sql(
);
CREATE INDEX profiles_candidate ON profiles(candidate_id);
)sql",
    // 5: the experiment log: what an evaluation set out to test, what was predicted, and
    // whether its candidate was kept (became the problem's best when it finished).
    R"sql(
ALTER TABLE evaluations ADD COLUMN hypothesis TEXT NOT NULL DEFAULT '';
ALTER TABLE evaluations ADD COLUMN predicted_s REAL;
ALTER TABLE evaluations ADD COLUMN kept INTEGER NOT NULL DEFAULT 0;
)sql",
    // 6: a record a candidate cannot quietly corrupt. An evaluation names the kforge process
    // that runs it (process_owner: host, boot, PID namespace, pid and start time), so a
    // later open can mark the rows of a dead one "interrupted"; a build keeps its
    // artifact's sha256 and why the cache was bypassed, when it was (cache_note).
    R"sql(
ALTER TABLE evaluations ADD COLUMN owner TEXT NOT NULL DEFAULT '';
CREATE INDEX evaluations_running ON evaluations(status) WHERE status = 'running';
ALTER TABLE builds ADD COLUMN sha256 TEXT NOT NULL DEFAULT '';
ALTER TABLE builds ADD COLUMN cache_note TEXT NOT NULL DEFAULT '';
)sql",
    // 7: an LLM call's token counts say where they came from: "reported" by the server, or
    // "estimated" from the text when it sent none (a stream without its usage chunk).
    // A run records the process that runs it (as evaluations do since 6), so a run whose
    // kforge was killed becomes "interrupted" instead of "running" forever.
    R"sql(
ALTER TABLE llm_calls ADD COLUMN usage_source TEXT NOT NULL DEFAULT 'reported';
ALTER TABLE runs ADD COLUMN owner TEXT NOT NULL DEFAULT '';
)sql",
};

static_assert(migrations.size() == store::latest_schema_version,
              "one migration per schema version: append to `migrations` and bump latest_schema_version together");

constexpr int busy_timeout_ms = 10'000;

[[noreturn]] void fail(sqlite3* db, const std::filesystem::path& path, std::string_view what) {
  KFORGE_THROW(store, "{}: {}: {}", path.string(), what, db ? sqlite3_errmsg(db) : "out of memory");
}

/// One prepared statement; finalized on scope exit. Binds are 1-based, in call order.
class statement {
public:
  statement(sqlite3* db, const std::filesystem::path& path, std::string_view sql) : m_db(db), m_path(path) {
    if (sqlite3_prepare_v2(db, sql.data(), static_cast<int>(sql.size()), &m_stmt, nullptr) != SQLITE_OK)
      fail(m_db, m_path, "preparing statement");
  }
  ~statement() { sqlite3_finalize(m_stmt); }
  statement(const statement&) = delete;
  statement& operator=(const statement&) = delete;

  statement& bind(int64_t v) { return check(sqlite3_bind_int64(m_stmt, ++m_index, v)); }
  statement& bind(int v) { return check(sqlite3_bind_int(m_stmt, ++m_index, v)); }
  statement& bind(bool v) { return check(sqlite3_bind_int(m_stmt, ++m_index, v ? 1 : 0)); }
  statement& bind(double v) { return check(sqlite3_bind_double(m_stmt, ++m_index, v)); }
  // Every text written goes through here. It is scrubbed of secret values, since what a
  // candidate printed (check details, build diagnostics, messages) can hold a key it read,
  // and made valid UTF-8 (stray bytes become U+FFFD), since a TEXT column is read back as
  // UTF-8 by everything that shows it. Only the candidate's own source is kept as given
  // (bind_blob): it is hashed, and rebuilt from.
  statement& bind(std::string_view v) { return bind_exact(to_valid_utf8(scrub_secrets(v))); }
  statement& bind(const std::string& v) { return bind(std::string_view{v}); }
  statement& bind(const char* v) { return bind(std::string_view{v}); }
  /// A JSON document: scrubbed inside its strings only, so it stays valid JSON.
  statement& bind_json(std::string_view v) { return bind_exact(to_valid_utf8(scrub_secrets_json(v))); }
  /// Bytes kept exactly (not UTF-8 checked, not scrubbed): a candidate's source.
  statement& bind_blob(std::string_view v) {
    return check(sqlite3_bind_blob64(m_stmt, ++m_index, v.data(), v.size(), SQLITE_TRANSIENT));
  }
  statement& bind(std::optional<int64_t> v) {
    return v ? bind(*v) : check(sqlite3_bind_null(m_stmt, ++m_index));
  }
  statement& bind(std::optional<double> v) {
    return v ? bind(*v) : check(sqlite3_bind_null(m_stmt, ++m_index));
  }

  /// @return true while a row is available.
  bool step() {
    int rc = sqlite3_step(m_stmt);
    if (rc == SQLITE_ROW) return true;
    if (rc == SQLITE_DONE) return false;
    fail(m_db, m_path, "executing statement");
  }
  /// Steps to completion (for statements that return no rows, or whose rows are unused).
  void run() {
    while (step()) {
    }
  }

  [[nodiscard]] bool is_null(int col) const { return sqlite3_column_type(m_stmt, col) == SQLITE_NULL; }
  [[nodiscard]] int64_t i64(int col) const { return sqlite3_column_int64(m_stmt, col); }
  [[nodiscard]] int i32(int col) const { return sqlite3_column_int(m_stmt, col); }
  [[nodiscard]] double f64(int col) const { return sqlite3_column_double(m_stmt, col); }
  [[nodiscard]] std::string text(int col) const {
    const auto* p = reinterpret_cast<const char*>(sqlite3_column_text(m_stmt, col));
    if (!p) return {};
    return std::string(p, static_cast<size_t>(sqlite3_column_bytes(m_stmt, col)));
  }
  /// A column's bytes as stored, whatever its type (a BLOB, or TEXT from older versions).
  [[nodiscard]] std::string bytes(int col) const {
    const auto* p = static_cast<const char*>(sqlite3_column_blob(m_stmt, col));
    if (!p) return {};
    return std::string(p, static_cast<size_t>(sqlite3_column_bytes(m_stmt, col)));
  }
  [[nodiscard]] std::optional<int64_t> opt_i64(int col) const {
    if (is_null(col)) return std::nullopt;
    return i64(col);
  }
  [[nodiscard]] std::optional<double> opt_f64(int col) const {
    if (is_null(col)) return std::nullopt;
    return f64(col);
  }

private:
  statement& bind_exact(const std::string& v) {
    return check(sqlite3_bind_text64(m_stmt, ++m_index, v.data(), v.size(), SQLITE_TRANSIENT, SQLITE_UTF8));
  }
  statement& check(int rc) {
    if (rc != SQLITE_OK) fail(m_db, m_path, "binding parameter");
    return *this;
  }
  sqlite3* m_db;
  const std::filesystem::path& m_path;
  sqlite3_stmt* m_stmt = nullptr;
  int m_index = 0;
};

/// Runs SQL without parameters (pragmas, transaction control, migration scripts).
void exec(sqlite3* db, const std::filesystem::path& path, const std::string& sql, std::string_view what) {
  char* err = nullptr;
  if (sqlite3_exec(db, sql.c_str(), nullptr, nullptr, &err) != SQLITE_OK) {
    std::string msg = err ? err : sqlite3_errmsg(db);
    sqlite3_free(err);
    KFORGE_THROW(store, "{}: {}: {}", path.string(), what, msg);
  }
}

int read_user_version(sqlite3* db, const std::filesystem::path& path) {
  statement s(db, path, "PRAGMA user_version");
  if (!s.step()) fail(db, path, "reading schema version");
  return s.i32(0);
}

build_record read_build(const statement& s) {
  build_record b;
  b.id = s.i64(0);
  b.candidate_id = s.i64(1);
  b.role = s.text(2);
  b.compiler = s.text(3);
  b.flags = s.text(4);
  b.cache_key = s.text(5);
  b.ok = s.i32(6) != 0;
  b.cached = s.i32(7) != 0;
  b.diagnostics = s.text(8);
  b.duration_s = s.f64(9);
  b.created_at = s.text(10);
  b.resources_json = s.text(11);
  b.sha256 = s.text(12);
  b.cache_note = s.text(13);
  return b;
}

} // namespace

store::store(const std::filesystem::path& db_path) : m_path(db_path) {
  if (auto parent = m_path.parent_path(); !parent.empty()) {
    std::error_code ec;
    std::filesystem::create_directories(parent, ec);
    if (ec) KFORGE_THROW(store, "{}: cannot create directory {}: {}", m_path.string(), parent.string(), ec.message());
  }
  int rc = sqlite3_open_v2(m_path.c_str(), &m_db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_FULLMUTEX,
                           nullptr);
  if (rc != SQLITE_OK) {
    std::string msg = m_db ? sqlite3_errmsg(m_db) : sqlite3_errstr(rc);
    sqlite3_close_v2(m_db);
    m_db = nullptr;
    KFORGE_THROW(store, "{}: cannot open database: {}", m_path.string(), msg);
  }
  try {
    sqlite3_extended_result_codes(m_db, 1);
    if (sqlite3_busy_timeout(m_db, busy_timeout_ms) != SQLITE_OK) fail(m_db, m_path, "setting busy timeout");
    exec(m_db, m_path, "PRAGMA foreign_keys=ON", "enabling foreign keys");
    // Switching a fresh file to WAL needs an exclusive lock and does not wait on the busy
    // handler: when several kforge processes create one database at once, retry.
    for (int attempt = 0;; ++attempt) {
      const int rc = sqlite3_exec(m_db, "PRAGMA journal_mode=WAL", nullptr, nullptr, nullptr);
      if (rc == SQLITE_OK) break;
      if ((rc != SQLITE_BUSY && rc != SQLITE_LOCKED) || attempt * 10 > busy_timeout_ms)
        fail(m_db, m_path, "enabling WAL journal");
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    exec(m_db, m_path, "PRAGMA synchronous=NORMAL", "setting synchronous mode");
    migrate();
    mark_interrupted_evaluations();
  } catch (...) {
    sqlite3_close_v2(m_db);
    m_db = nullptr;
    throw;
  }
}

store::~store() { sqlite3_close_v2(m_db); }

void store::migrate() {
  auto newer_check = [this](int version) {
    if (version > latest_schema_version)
      KFORGE_THROW(store, "{}: database schema version {} is newer than this kforge (knows up to {}); upgrade kforge",
                   m_path.string(), version, latest_schema_version);
  };
  newer_check(read_user_version(m_db, m_path));

  for (;;) {
    // IMMEDIATE takes the write lock up front, so two processes opening a fresh file
    // at once serialize here and the second sees the first one's version.
    exec(m_db, m_path, "BEGIN IMMEDIATE", "starting migration");
    try {
      int version = read_user_version(m_db, m_path);
      newer_check(version);
      if (version == latest_schema_version) {
        exec(m_db, m_path, "COMMIT", "finishing migration");
        return;
      }
      exec(m_db, m_path, std::string(migrations[static_cast<size_t>(version)]),
           fmt::format("migrating schema to version {}", version + 1));
      // PRAGMA takes no bound parameters; the value is this binary's own constant.
      exec(m_db, m_path, fmt::format("PRAGMA user_version = {}", version + 1), "recording schema version");
      exec(m_db, m_path, "COMMIT", "committing migration");
    } catch (...) {
      if (!sqlite3_get_autocommit(m_db)) sqlite3_exec(m_db, "ROLLBACK", nullptr, nullptr, nullptr);
      throw;
    }
  }
}

int store::schema_version() const { return read_user_version(m_db, m_path); }

namespace {

/// Rows of `table` still "running" whose owner is known to be gone become "interrupted".
/// Rows without an owner predate the column: whoever wrote them cannot be told, so they
/// stay as they are. An owner this process cannot see (another host or PID namespace) is
/// left alone too: only an owner known to be gone is declared so.
int mark_interrupted(sqlite3* db, const std::filesystem::path& path, std::string_view table,
                     std::string_view message_column, std::string_view what) {
  std::vector<std::pair<int64_t, std::string>> running;
  {
    statement s(db, path, fmt::format("SELECT id, owner FROM {} WHERE status = 'running' AND owner != ''", table));
    while (s.step()) running.emplace_back(s.i64(0), s.text(1));
  }
  std::map<std::string, bool> gone;
  int marked = 0;
  for (auto& [id, owner_text] : running) {
    const auto owner = parse_process_owner(owner_text);
    if (!owner) continue;
    auto it = gone.find(owner_text);
    if (it == gone.end()) it = gone.emplace(owner_text, owner_state(*owner) == owner_liveness::gone).first;
    if (!it->second) continue;
    statement u(db, path,
                fmt::format("UPDATE {} SET status = 'interrupted', {} = ? WHERE id = ? AND status = 'running' "
                            "AND owner = ?",
                            table, message_column));
    u.bind(fmt::format("interrupted: the kforge process that ran {} (pid {}) ended before it finished (killed, or "
                       "the machine restarted); what it recorded up to then is kept",
                       what, owner->pid));
    u.bind(id).bind(owner_text);
    u.run();
    marked += sqlite3_changes(db);
  }
  return marked;
}

} // namespace

int store::mark_interrupted_evaluations() {
  return mark_interrupted(m_db, m_path, "evaluations", "message", "it") +
         mark_interrupted(m_db, m_path, "runs", "stop_reason", "the run");
}

int store::mark_cancelled(const process_owner& owner, const std::string& reason) {
  const std::string o = to_string(owner);
  int marked = 0;
  for (auto [table, column] : {std::pair{"evaluations", "message"}, std::pair{"runs", "stop_reason"}}) {
    // "interrupted" too: a store opened between the owner's end and this call marks it so.
    statement u(m_db, m_path,
                fmt::format("UPDATE {} SET status = 'cancelled', {} = ? WHERE owner = ? AND status IN ('running', "
                            "'interrupted')",
                            table, column));
    u.bind("cancelled: " + reason).bind(o);
    u.run();
    marked += sqlite3_changes(m_db);
  }
  return marked;
}

int64_t store::put_problem(const problem_record& p) {
  {
    statement ins(m_db, m_path,
                  "INSERT INTO problems (name, path, spec_hash, spec_toml) VALUES (?, ?, ?, ?) "
                  "ON CONFLICT (name, spec_hash) DO NOTHING RETURNING id");
    ins.bind(p.name).bind(p.path).bind(p.spec_hash).bind(p.spec_toml);
    if (ins.step()) {
      int64_t id = ins.i64(0);
      ins.run();
      return id;
    }
  }
  statement sel(m_db, m_path, "SELECT id FROM problems WHERE name = ? AND spec_hash = ?");
  sel.bind(p.name).bind(p.spec_hash);
  if (!sel.step()) KFORGE_THROW(store, "{}: problem '{}' neither inserted nor found", m_path.string(), p.name);
  return sel.i64(0);
}

int64_t store::put_candidate(int64_t problem_id, const std::string& source, const std::string& origin,
                             const std::string& label, std::optional<int64_t> parent_id) {
  const std::string hash = sha256_hex(source);
  {
    statement ins(m_db, m_path,
                  "INSERT INTO candidates (problem_id, hash, source, origin, label, parent_id) "
                  "VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (problem_id, hash) DO UPDATE SET parent_id = "
                  "COALESCE(candidates.parent_id, excluded.parent_id) RETURNING id");
    ins.bind(problem_id).bind(hash).bind_blob(source).bind(origin).bind(label).bind(parent_id);
    if (ins.step()) {
      int64_t id = ins.i64(0);
      ins.run();
      return id;
    }
  }
  statement sel(m_db, m_path, "SELECT id FROM candidates WHERE problem_id = ? AND hash = ?");
  sel.bind(problem_id).bind(hash);
  if (!sel.step())
    KFORGE_THROW(store, "{}: candidate {} of problem {} neither inserted nor found", m_path.string(), hash, problem_id);
  return sel.i64(0);
}

std::optional<candidate_record> store::get_candidate(int64_t id) const {
  statement s(m_db, m_path,
              "SELECT id, problem_id, hash, source, origin, label, parent_id, created_at FROM candidates WHERE id = ?");
  s.bind(id);
  if (!s.step()) return std::nullopt;
  candidate_record c;
  c.id = s.i64(0);
  c.problem_id = s.i64(1);
  c.hash = s.text(2);
  c.source = s.bytes(3);
  c.origin = s.text(4);
  c.label = s.text(5);
  c.parent_id = s.opt_i64(6);
  c.created_at = s.text(7);
  return c;
}

int64_t store::put_build(const build_record& b) {
  // created_at: the caller's timestamp when given, else now.
  statement s(m_db, m_path,
              "INSERT INTO builds (candidate_id, role, compiler, flags, cache_key, ok, cached, diagnostics, "
              "duration_s, created_at, resources_json, sha256, cache_note) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, "
              "COALESCE(NULLIF(?, ''), " KFORGE_NOW "), ?, ?, ?) RETURNING id");
  s.bind(b.candidate_id).bind(b.role).bind(b.compiler).bind(b.flags).bind(b.cache_key).bind(b.ok).bind(b.cached);
  s.bind(b.diagnostics).bind(b.duration_s).bind(b.created_at);
  s.bind_json(b.resources_json.empty() ? "[]" : b.resources_json).bind(b.sha256).bind(b.cache_note);
  if (!s.step()) fail(m_db, m_path, "inserting build");
  int64_t id = s.i64(0);
  s.run();
  return id;
}

std::vector<build_record> store::builds_of(int64_t candidate_id) const {
  statement s(m_db, m_path,
              "SELECT id, candidate_id, role, compiler, flags, cache_key, ok, cached, diagnostics, duration_s, "
              "created_at, resources_json, sha256, cache_note FROM builds WHERE candidate_id = ? ORDER BY id");
  s.bind(candidate_id);
  std::vector<build_record> out;
  while (s.step()) out.push_back(read_build(s));
  return out;
}

int64_t store::begin_evaluation(int64_t candidate_id, std::optional<int64_t> build_id,
                                const std::string& config_json) {
  statement s(m_db, m_path,
              "INSERT INTO evaluations (candidate_id, build_id, status, config_json, owner) "
              "VALUES (?, ?, 'running', ?, ?) RETURNING id");
  s.bind(candidate_id).bind(build_id).bind_json(config_json).bind(to_string(current_process_owner()));
  if (!s.step()) fail(m_db, m_path, "inserting evaluation");
  int64_t id = s.i64(0);
  s.run();
  return id;
}

void store::put_check(int64_t evaluation_id, const check_record& c) {
  statement s(m_db, m_path,
              "INSERT INTO checks (evaluation_id, name, case_name, trial, passed, detail_json) "
              "VALUES (?, ?, ?, ?, ?, ?)");
  s.bind(evaluation_id).bind(c.name).bind(c.case_name).bind(c.trial).bind(c.passed).bind_json(c.detail_json);
  s.run();
}

void store::put_timing(int64_t evaluation_id, const timing_record& t) {
  statement s(m_db, m_path,
              "INSERT INTO timings (evaluation_id, subject, samples, median_s, mean_s, min_s, max_s, stdev_s, "
              "ci_rel, p10_s, p90_s) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)");
  s.bind(evaluation_id).bind(t.subject).bind(t.samples).bind(t.median_s).bind(t.mean_s).bind(t.min_s);
  s.bind(t.max_s).bind(t.stdev_s).bind(t.ci_rel).bind(t.p10_s).bind(t.p90_s);
  s.run();
}

void store::finish_evaluation(int64_t evaluation_id, const std::string& status, const std::string& message,
                              const std::string& summary_json, int device_index, const std::string& device) {
  statement s(m_db, m_path,
              "UPDATE evaluations SET status = ?, message = ?, summary_json = ?, device_index = ?, device = ?, "
              "finished_at = " KFORGE_NOW " WHERE id = ? RETURNING id");
  s.bind(status).bind(message).bind_json(summary_json).bind(device_index).bind(device).bind(evaluation_id);
  bool found = s.step();
  s.run();
  if (!found) KFORGE_THROW(store, "{}: no evaluation with id {}", m_path.string(), evaluation_id);
}

std::optional<evaluation_record> store::get_evaluation(int64_t id) const {
  evaluation_record e;
  {
    statement s(m_db, m_path,
                "SELECT id, candidate_id, build_id, status, message, config_json, summary_json, started_at, "
                "finished_at FROM evaluations WHERE id = ?");
    s.bind(id);
    if (!s.step()) return std::nullopt;
    e.id = s.i64(0);
    e.candidate_id = s.i64(1);
    e.build_id = s.opt_i64(2);
    e.status = s.text(3);
    e.message = s.text(4);
    e.config_json = s.text(5);
    e.summary_json = s.text(6);
    e.started_at = s.text(7);
    e.finished_at = s.text(8); // empty while running
  }
  {
    statement s(m_db, m_path,
                "SELECT name, case_name, trial, passed, detail_json FROM checks WHERE evaluation_id = ? ORDER BY id");
    s.bind(id);
    while (s.step()) {
      check_record c;
      c.name = s.text(0);
      c.case_name = s.text(1);
      c.trial = s.i32(2);
      c.passed = s.i32(3) != 0;
      c.detail_json = s.text(4);
      e.checks.push_back(std::move(c));
    }
  }
  {
    statement s(m_db, m_path,
                "SELECT subject, samples, median_s, mean_s, min_s, max_s, stdev_s, ci_rel, p10_s, p90_s "
                "FROM timings WHERE evaluation_id = ? ORDER BY id");
    s.bind(id);
    while (s.step()) {
      timing_record t;
      t.subject = s.text(0);
      t.samples = s.i32(1);
      t.median_s = s.f64(2);
      t.mean_s = s.f64(3);
      t.min_s = s.f64(4);
      t.max_s = s.f64(5);
      t.stdev_s = s.f64(6);
      t.ci_rel = s.f64(7);
      t.p10_s = s.f64(8);
      t.p90_s = s.f64(9);
      e.timings.push_back(std::move(t));
    }
  }
  return e;
}

std::vector<evaluation_summary> store::list_evaluations(const std::string& problem, int limit) const {
  // A subject timed more than once reports its first timing. LIMIT -1 is no limit.
  statement s(m_db, m_path,
              "SELECT e.id, p.name, c.id, c.label, c.hash, e.status, e.message, "
              "  (SELECT t.median_s FROM timings t WHERE t.evaluation_id = e.id AND t.subject = 'candidate' "
              "   ORDER BY t.id LIMIT 1), "
              "  (SELECT t.median_s FROM timings t WHERE t.evaluation_id = e.id AND t.subject = 'reference' "
              "   ORDER BY t.id LIMIT 1), "
              "  e.started_at "
              "FROM evaluations e JOIN candidates c ON c.id = e.candidate_id JOIN problems p ON p.id = c.problem_id "
              "WHERE ?1 = '' OR p.name = ?1 "
              "ORDER BY e.id DESC LIMIT ?2");
  s.bind(problem).bind(limit > 0 ? limit : -1);
  std::vector<evaluation_summary> out;
  while (s.step()) {
    evaluation_summary r;
    r.id = s.i64(0);
    r.problem = s.text(1);
    r.candidate_id = s.i64(2);
    r.candidate_label = s.text(3);
    r.candidate_hash = s.text(4);
    r.status = s.text(5);
    r.message = s.text(6);
    r.candidate_median_s = s.opt_f64(7);
    r.reference_median_s = s.opt_f64(8);
    r.started_at = s.text(9);
    out.push_back(std::move(r));
  }
  return out;
}

int64_t store::put_profile(const profile_record& r) {
  statement s(m_db, m_path,
              "INSERT INTO profiles (candidate_id, evaluation_id, device, ok, failure, digest_json, digest_text) "
              "VALUES (?, ?, ?, ?, ?, ?, ?) RETURNING id");
  s.bind(r.candidate_id).bind(r.evaluation_id).bind(r.device).bind(r.ok).bind(r.failure).bind_json(r.digest_json);
  s.bind(r.digest_text);
  if (!s.step()) fail(m_db, m_path, "inserting profile");
  int64_t id = s.i64(0);
  s.run();
  return id;
}

std::optional<profile_record> store::latest_profile(int64_t candidate_id) const {
  statement s(m_db, m_path,
              "SELECT id, candidate_id, evaluation_id, device, ok, failure, digest_json, digest_text, created_at "
              "FROM profiles WHERE candidate_id = ? ORDER BY id DESC LIMIT 1");
  s.bind(candidate_id);
  if (!s.step()) return std::nullopt;
  return profile_record{s.i64(0), s.i64(1), s.opt_i64(2), s.text(3), s.i32(4) != 0, s.text(5), s.text(6), s.text(7),
                        s.text(8)};
}

void store::set_experiment(int64_t evaluation_id, const std::string& hypothesis, std::optional<double> predicted_s) {
  statement s(m_db, m_path, "UPDATE evaluations SET hypothesis = ?, predicted_s = ? WHERE id = ?");
  s.bind(hypothesis).bind(predicted_s).bind(evaluation_id);
  s.run();
}

void store::set_kept(int64_t evaluation_id, bool kept) {
  statement s(m_db, m_path, "UPDATE evaluations SET kept = ? WHERE id = ?");
  s.bind(kept).bind(evaluation_id);
  s.run();
}

std::optional<double> store::best_median(int64_t problem_id) const {
  statement s(m_db, m_path,
              "SELECT MIN(t.median_s) FROM timings t JOIN evaluations e ON e.id = t.evaluation_id "
              "JOIN candidates c ON c.id = e.candidate_id WHERE c.problem_id = ? AND e.status = 'passed' "
              "AND t.subject = 'candidate'");
  s.bind(problem_id);
  if (!s.step()) return std::nullopt;
  return s.opt_f64(0);
}

std::vector<experiment_row> store::experiment_log(const std::string& problem, int limit) const {
  statement s(m_db, m_path,
              "SELECT e.id, p.name, c.id, c.label, c.origin, e.status, e.message, e.hypothesis, e.predicted_s, e.kept, "
              "  (SELECT t.median_s FROM timings t WHERE t.evaluation_id = e.id AND t.subject = 'candidate' "
              "   ORDER BY t.id LIMIT 1), "
              "  (SELECT t.median_s FROM timings t WHERE t.evaluation_id = e.id AND t.subject = 'reference' "
              "   ORDER BY t.id LIMIT 1), e.started_at "
              "FROM evaluations e JOIN candidates c ON c.id = e.candidate_id JOIN problems p ON p.id = c.problem_id "
              "WHERE (?1 = '' OR p.name = ?1) AND c.origin NOT LIKE 'control:%' "
              "ORDER BY e.id DESC LIMIT ?2");
  s.bind(problem).bind(limit > 0 ? limit : -1);
  std::vector<experiment_row> out;
  while (s.step()) {
    experiment_row r;
    r.evaluation_id = s.i64(0);
    r.problem = s.text(1);
    r.candidate_id = s.i64(2);
    r.label = s.text(3);
    r.origin = s.text(4);
    r.status = s.text(5);
    r.message = s.text(6);
    r.hypothesis = s.text(7);
    r.predicted_s = s.opt_f64(8);
    r.kept = s.i32(9) != 0;
    r.median_s = s.opt_f64(10);
    r.reference_median_s = s.opt_f64(11);
    r.started_at = s.text(12);
    out.push_back(std::move(r));
  }
  std::reverse(out.begin(), out.end()); // oldest first, as a log reads
  return out;
}

void store::set_evaluation_status(int64_t evaluation_id, const std::string& status, const std::string& message) {
  statement s(m_db, m_path, "UPDATE evaluations SET status = ?, message = ? WHERE id = ?");
  s.bind(status).bind(message).bind(evaluation_id);
  s.run();
}

std::optional<int64_t> store::find_evaluation(int64_t candidate_id, const std::string& device_model,
                                              const std::string& config_json) const {
  statement s(m_db, m_path,
              "SELECT id FROM evaluations WHERE candidate_id = ? AND config_json = ? AND finished_at IS NOT NULL "
              "AND status NOT IN ('running', 'interrupted', 'cancelled', 'error') AND (? = '' OR device LIKE '%' || ?) ORDER BY id DESC LIMIT 1");
  s.bind(candidate_id).bind_json(config_json).bind(device_model).bind(device_model);
  if (!s.step()) return std::nullopt;
  return s.i64(0);
}

std::optional<int64_t> store::find_problem(const std::string& name, const std::string& spec_hash) const {
  statement s(m_db, m_path, "SELECT id FROM problems WHERE name = ? AND spec_hash = ?");
  s.bind(name).bind(spec_hash);
  if (!s.step()) return std::nullopt;
  return s.i64(0);
}

// ------------------------------------------------------------------------------ runs

namespace {

run_record read_run(const statement& s) {
  run_record r;
  r.id = s.i64(0);
  r.problem_id = s.i64(1);
  r.problem = s.text(2);
  r.problem_path = s.text(3);
  r.strategy = s.text(4);
  r.config_json = s.text(5);
  r.status = s.text(6);
  r.stop_reason = s.text(7);
  r.best_candidate_id = s.opt_i64(8);
  r.best_evaluation_id = s.opt_i64(9);
  r.resumes = s.i32(10);
  r.started_at = s.text(11);
  r.finished_at = s.text(12);
  r.owner = s.text(13);
  return r;
}

constexpr const char* run_columns =
    "SELECT r.id, r.problem_id, p.name, p.path, r.strategy, r.config_json, r.status, r.stop_reason, "
    "r.best_candidate_id, r.best_evaluation_id, r.resumes, r.started_at, r.finished_at, r.owner "
    "FROM runs r JOIN problems p ON p.id = r.problem_id ";

} // namespace

int64_t store::begin_run(int64_t problem_id, const std::string& strategy, const std::string& config_json) {
  statement s(m_db, m_path,
              "INSERT INTO runs (problem_id, strategy, config_json, owner) VALUES (?, ?, ?, ?) RETURNING id");
  s.bind(problem_id).bind(strategy).bind_json(config_json).bind(to_string(current_process_owner()));
  if (!s.step()) fail(m_db, m_path, "inserting run");
  int64_t id = s.i64(0);
  s.run();
  return id;
}

void store::finish_run(int64_t run_id, const std::string& status, const std::string& stop_reason) {
  statement s(m_db, m_path,
              "UPDATE runs SET status = ?, stop_reason = ?, finished_at = " KFORGE_NOW " WHERE id = ?");
  s.bind(status).bind(stop_reason).bind(run_id);
  s.run();
}

void store::set_run_best(int64_t run_id, int64_t candidate_id, int64_t evaluation_id) {
  statement s(m_db, m_path, "UPDATE runs SET best_candidate_id = ?, best_evaluation_id = ? WHERE id = ?");
  s.bind(candidate_id).bind(evaluation_id).bind(run_id);
  s.run();
}

void store::resume_run(int64_t run_id) {
  statement s(m_db, m_path,
              "UPDATE runs SET status = 'running', stop_reason = '', finished_at = NULL, resumes = resumes + 1, "
              "owner = ? WHERE id = ?");
  s.bind(to_string(current_process_owner())).bind(run_id);
  s.run();
}

std::optional<run_record> store::get_run(int64_t run_id) const {
  statement s(m_db, m_path, std::string(run_columns) + "WHERE r.id = ?");
  s.bind(run_id);
  if (!s.step()) return std::nullopt;
  return read_run(s);
}

std::vector<run_record> store::list_runs(int limit) const {
  statement s(m_db, m_path, std::string(run_columns) + "ORDER BY r.id DESC LIMIT ?");
  s.bind(limit > 0 ? limit : -1);
  std::vector<run_record> out;
  while (s.step()) out.push_back(read_run(s));
  return out;
}

int64_t store::put_run_evaluation(const run_evaluation_record& r) {
  statement s(m_db, m_path,
              "INSERT INTO run_evaluations (run_id, evaluation_id, candidate_id, round, step, idea_id, params_json, "
              "reused) VALUES (?, ?, ?, ?, ?, ?, ?, ?) RETURNING id");
  s.bind(r.run_id).bind(r.evaluation_id).bind(r.candidate_id).bind(r.round).bind(r.step).bind(r.idea_id);
  s.bind_json(r.params_json.empty() ? "{}" : r.params_json).bind(r.reused);
  if (!s.step()) fail(m_db, m_path, "inserting run evaluation");
  int64_t id = s.i64(0);
  s.run();
  return id;
}

std::vector<run_evaluation_record> store::run_evaluations(int64_t run_id) const {
  statement s(m_db, m_path,
              "SELECT re.id, re.run_id, re.evaluation_id, re.candidate_id, re.round, re.step, re.idea_id, "
              "  re.params_json, re.reused, re.created_at, e.status, e.message, c.label, c.origin, c.parent_id, "
              "  (SELECT t.median_s FROM timings t WHERE t.evaluation_id = e.id AND t.subject = 'candidate' "
              "   ORDER BY t.id LIMIT 1), "
              "  (SELECT t.median_s FROM timings t WHERE t.evaluation_id = e.id AND t.subject = 'reference' "
              "   ORDER BY t.id LIMIT 1), e.device_index "
              "FROM run_evaluations re JOIN evaluations e ON e.id = re.evaluation_id "
              "JOIN candidates c ON c.id = re.candidate_id WHERE re.run_id = ? ORDER BY re.id");
  s.bind(run_id);
  std::vector<run_evaluation_record> out;
  while (s.step()) {
    run_evaluation_record r;
    r.id = s.i64(0);
    r.run_id = s.i64(1);
    r.evaluation_id = s.i64(2);
    r.candidate_id = s.i64(3);
    r.round = s.i32(4);
    r.step = s.text(5);
    r.idea_id = s.opt_i64(6);
    r.params_json = s.text(7);
    r.reused = s.i32(8) != 0;
    r.created_at = s.text(9);
    r.status = s.text(10);
    r.message = s.text(11);
    r.candidate_label = s.text(12);
    r.candidate_origin = s.text(13);
    r.parent_id = s.opt_i64(14);
    r.candidate_median_s = s.opt_f64(15);
    r.reference_median_s = s.opt_f64(16);
    r.device_index = s.i32(17);
    out.push_back(std::move(r));
  }
  return out;
}

int64_t store::put_idea(const idea_record& i) {
  statement s(m_db, m_path,
              "INSERT INTO ideas (run_id, round, title, body, llm_call_id) VALUES (?, ?, ?, ?, ?) RETURNING id");
  s.bind(i.run_id).bind(i.round).bind(i.title).bind(i.body).bind(i.llm_call_id);
  if (!s.step()) fail(m_db, m_path, "inserting idea");
  int64_t id = s.i64(0);
  s.run();
  return id;
}

std::vector<idea_record> store::ideas_of(int64_t run_id) const {
  statement s(m_db, m_path,
              "SELECT id, run_id, round, title, body, llm_call_id, created_at FROM ideas WHERE run_id = ? ORDER BY id");
  s.bind(run_id);
  std::vector<idea_record> out;
  while (s.step())
    out.push_back({s.i64(0), s.i64(1), s.i32(2), s.text(3), s.text(4), s.opt_i64(5), s.text(6)});
  return out;
}

int64_t store::put_llm_call(const llm_call_record& c) {
  statement s(m_db, m_path,
              "INSERT INTO llm_calls (run_id, role, provider, model, replay_key, request_hash, request_json, "
              "response_text, stop_reason, response_id, input_tokens, output_tokens, cached_input_tokens, "
              "cache_write_tokens, cost_usd, duration_s, error_kind, error_message, started_at, usage_source) "
              "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, COALESCE(NULLIF(?, ''), " KFORGE_NOW
              "), ?) RETURNING id");
  s.bind(c.run_id).bind(c.role).bind(c.provider).bind(c.model).bind(c.replay_key).bind(c.request_hash);
  s.bind_json(c.request_json).bind(c.response_text).bind(c.stop_reason).bind(c.response_id);
  s.bind(c.input_tokens).bind(c.output_tokens).bind(c.cached_input_tokens).bind(c.cache_write_tokens);
  s.bind(c.cost_usd).bind(c.duration_s).bind(c.error_kind).bind(c.error_message).bind(c.started_at);
  s.bind(c.usage_source);
  if (!s.step()) fail(m_db, m_path, "inserting llm call");
  int64_t id = s.i64(0);
  s.run();
  return id;
}

std::vector<llm_call_record> store::llm_calls_of(int64_t run_id) const {
  statement s(m_db, m_path,
              "SELECT id, run_id, role, provider, model, replay_key, request_hash, request_json, response_text, "
              "stop_reason, response_id, input_tokens, output_tokens, cached_input_tokens, cache_write_tokens, "
              "cost_usd, duration_s, error_kind, error_message, started_at, usage_source FROM llm_calls WHERE run_id = ? "
              "ORDER BY id");
  s.bind(run_id);
  std::vector<llm_call_record> out;
  while (s.step()) {
    llm_call_record c;
    c.id = s.i64(0);
    c.run_id = s.opt_i64(1);
    c.role = s.text(2);
    c.provider = s.text(3);
    c.model = s.text(4);
    c.replay_key = s.text(5);
    c.request_hash = s.text(6);
    c.request_json = s.text(7);
    c.response_text = s.text(8);
    c.stop_reason = s.text(9);
    c.response_id = s.text(10);
    c.input_tokens = s.i64(11);
    c.output_tokens = s.i64(12);
    c.cached_input_tokens = s.i64(13);
    c.cache_write_tokens = s.i64(14);
    c.cost_usd = s.opt_f64(15);
    c.duration_s = s.f64(16);
    c.error_kind = s.text(17);
    c.error_message = s.text(18);
    c.started_at = s.text(19);
    c.usage_source = s.text(20);
    out.push_back(std::move(c));
  }
  return out;
}

llm_totals store::llm_totals_of(int64_t run_id) const {
  statement s(m_db, m_path,
              "SELECT COUNT(*), COALESCE(SUM(error_kind != ''), 0), COALESCE(SUM(input_tokens), 0), "
              "COALESCE(SUM(output_tokens), 0), COALESCE(SUM(cached_input_tokens), 0), COALESCE(SUM(cost_usd), 0), "
              "COALESCE(SUM(cost_usd IS NULL AND error_kind = ''), 0), COALESCE(SUM(usage_source = 'estimated'), 0) "
              "FROM llm_calls WHERE run_id = ?");
  s.bind(run_id);
  llm_totals t;
  if (s.step()) {
    t.calls = s.i64(0);
    t.failed_calls = s.i64(1);
    t.input_tokens = s.i64(2);
    t.output_tokens = s.i64(3);
    t.cached_input_tokens = s.i64(4);
    t.cost_usd = s.f64(5);
    t.unpriced_calls = s.i64(6);
    t.estimated_calls = s.i64(7);
  }
  return t;
}

int64_t store::put_proposal(const proposal_record& p) {
  statement s(m_db, m_path,
              "INSERT INTO proposals (run_id, round, step, llm_call_id, parent_candidate_id, idea_id, status, error, "
              "candidate_id, notes_json) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING id");
  s.bind(p.run_id).bind(p.round).bind(p.step).bind(p.llm_call_id).bind(p.parent_candidate_id).bind(p.idea_id);
  s.bind(p.status).bind(p.error).bind(p.candidate_id).bind_json(p.notes_json.empty() ? "[]" : p.notes_json);
  if (!s.step()) fail(m_db, m_path, "inserting proposal");
  int64_t id = s.i64(0);
  s.run();
  return id;
}

std::vector<proposal_record> store::proposals_of(int64_t run_id) const {
  statement s(m_db, m_path,
              "SELECT id, run_id, round, step, llm_call_id, parent_candidate_id, idea_id, status, error, candidate_id, "
              "notes_json, created_at FROM proposals WHERE run_id = ? ORDER BY id");
  s.bind(run_id);
  std::vector<proposal_record> out;
  while (s.step()) {
    proposal_record p;
    p.id = s.i64(0);
    p.run_id = s.i64(1);
    p.round = s.i32(2);
    p.step = s.text(3);
    p.llm_call_id = s.opt_i64(4);
    p.parent_candidate_id = s.opt_i64(5);
    p.idea_id = s.opt_i64(6);
    p.status = s.text(7);
    p.error = s.text(8);
    p.candidate_id = s.opt_i64(9);
    p.notes_json = s.text(10);
    p.created_at = s.text(11);
    out.push_back(std::move(p));
  }
  return out;
}

#undef KFORGE_NOW

} // namespace kforge::store
