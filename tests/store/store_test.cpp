#include "store/store.hpp"

#include "core/error.hpp"
#include "core/fs.hpp"
#include "core/hash.hpp"
#include "core/process_owner.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <sqlite3.h>
#include <sys/wait.h>
#include <unistd.h>

#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <set>
#include <string>
#include <string_view>

namespace fs = std::filesystem;
using kforge::store::store;

namespace {

class StoreTest : public ::testing::Test {
protected:
  void SetUp() override {
    std::string tmpl = (fs::temp_directory_path() / "kforge-store-test-XXXXXX").string();
    ASSERT_NE(::mkdtemp(tmpl.data()), nullptr);
    m_dir = tmpl;
  }
  void TearDown() override {
    std::error_code ec;
    fs::remove_all(m_dir, ec);
  }
  [[nodiscard]] fs::path db_path() const { return m_dir / "kforge.db"; }

  static kforge::store::problem_record problem(const std::string& name = "softmax",
                                               const std::string& spec_hash = "h1") {
    return {name, "/problems/" + name, spec_hash, "name = \"" + name + "\"\n"};
  }

  fs::path m_dir;
};

/// Runs one SQL query on a raw connection and returns the first column of every row.
std::vector<std::string> raw_query(const fs::path& db, const std::string& sql) {
  sqlite3* h = nullptr;
  EXPECT_EQ(sqlite3_open_v2(db.c_str(), &h, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, nullptr), SQLITE_OK);
  std::vector<std::string> rows;
  sqlite3_stmt* st = nullptr;
  EXPECT_EQ(sqlite3_prepare_v2(h, sql.c_str(), -1, &st, nullptr), SQLITE_OK) << sqlite3_errmsg(h);
  int rc;
  while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
    const auto* t = sqlite3_column_text(st, 0);
    rows.emplace_back(t ? reinterpret_cast<const char*>(t) : "");
  }
  EXPECT_EQ(rc, SQLITE_DONE) << sqlite3_errmsg(h);
  sqlite3_finalize(st);
  sqlite3_close(h);
  return rows;
}

/// True for "YYYY-MM-DDTHH:MM:SS.mmmZ".
bool is_iso_utc_ms(const std::string& s) {
  const std::string_view shape = "dddd-dd-ddTdd:dd:dd.dddZ";
  if (s.size() != shape.size()) return false;
  for (size_t i = 0; i < s.size(); ++i) {
    if (shape[i] == 'd' ? (s[i] < '0' || s[i] > '9') : s[i] != shape[i]) return false;
  }
  return true;
}

kforge::store::timing_record timing(const std::string& subject, double median) {
  kforge::store::timing_record t;
  t.subject = subject;
  t.samples = 50;
  t.median_s = median;
  t.mean_s = median * 1.01;
  t.min_s = median * 0.9;
  t.max_s = median * 1.5;
  t.stdev_s = median * 0.02;
  t.ci_rel = 0.005;
  t.p10_s = median * 0.95;
  t.p90_s = median * 1.1;
  return t;
}

} // namespace

// ---------------------------------------------------------------- schema

TEST_F(StoreTest, FreshDatabaseReachesLatestVersionWithTables) {
  {
    store db(db_path());
    EXPECT_EQ(db.schema_version(), store::latest_schema_version);
  }
  auto tables = raw_query(db_path(), "SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name");
  std::set<std::string> have(tables.begin(), tables.end());
  for (const char* t : {"problems", "candidates", "builds", "evaluations", "checks", "timings"})
    EXPECT_TRUE(have.count(t)) << "missing table " << t;
  auto indexes = raw_query(db_path(), "SELECT name FROM sqlite_master WHERE type = 'index'");
  std::set<std::string> idx(indexes.begin(), indexes.end());
  for (const char* i : {"evaluations_candidate", "checks_evaluation", "timings_evaluation"})
    EXPECT_TRUE(idx.count(i)) << "missing index " << i;
  EXPECT_EQ(raw_query(db_path(), "PRAGMA journal_mode"), std::vector<std::string>{"wal"});
}

TEST_F(StoreTest, CreatesParentDirectories) {
  auto nested = m_dir / "a" / "b" / "c" / "k.db";
  store db(nested);
  EXPECT_TRUE(fs::exists(nested));
  EXPECT_EQ(db.schema_version(), store::latest_schema_version);
}

TEST_F(StoreTest, ReopenIsANoOp) {
  int64_t pid = 0;
  {
    store db(db_path());
    pid = db.put_problem(problem());
  }
  {
    store db(db_path());
    EXPECT_EQ(db.schema_version(), store::latest_schema_version);
    EXPECT_EQ(db.put_problem(problem()), pid);
  }
  EXPECT_EQ(raw_query(db_path(), "SELECT count(*) FROM problems"), std::vector<std::string>{"1"});
}

TEST_F(StoreTest, NewerSchemaVersionIsRejected) {
  raw_query(db_path(), "PRAGMA user_version = 99");
  try {
    store db(db_path());
    FAIL() << "opened a database from the future";
  } catch (const kforge::error& e) {
    EXPECT_EQ(e.kind(), kforge::error_kind::store);
    std::string expected = db_path().string() + ": database schema version 99 is newer than this kforge (knows up to " +
                           std::to_string(store::latest_schema_version) + "); upgrade kforge";
    EXPECT_EQ(std::string(e.what()), expected);
  }
  // The file was left alone.
  EXPECT_EQ(raw_query(db_path(), "PRAGMA user_version"), std::vector<std::string>{"99"});
  EXPECT_TRUE(raw_query(db_path(), "SELECT name FROM sqlite_master WHERE type = 'table'").empty());
}

TEST_F(StoreTest, UnopenablePathNamesTheFile) {
  fs::create_directories(db_path()); // a directory where the file should be
  try {
    store db(db_path());
    FAIL() << "opened a directory as a database";
  } catch (const kforge::error& e) {
    EXPECT_EQ(e.kind(), kforge::error_kind::store);
    EXPECT_NE(std::string(e.what()).find(db_path().string()), std::string::npos) << e.what();
  }
}

// ---------------------------------------------------------------- problems and candidates

TEST_F(StoreTest, PutProblemIsIdempotent) {
  store db(db_path());
  auto a = db.put_problem(problem("softmax", "h1"));
  EXPECT_EQ(db.put_problem(problem("softmax", "h1")), a);
  auto b = db.put_problem(problem("softmax", "h2")); // the spec changed: a new problem row
  auto c = db.put_problem(problem("matmul", "h1"));
  EXPECT_NE(a, b);
  EXPECT_NE(a, c);
  EXPECT_NE(b, c);
  EXPECT_EQ(db.put_problem(problem("softmax", "h2")), b);
}

TEST_F(StoreTest, PutCandidateIsIdempotentAndHashesTheSource) {
  store db(db_path());
  auto pid = db.put_problem(problem());
  const std::string src = "__global__ void k() {}\n";
  auto c1 = db.put_candidate(pid, src, "file", "k.cu");
  EXPECT_EQ(db.put_candidate(pid, src, "llm", "other.cu"), c1);
  auto c2 = db.put_candidate(pid, src + "// v2\n", "file", "k2.cu");
  EXPECT_NE(c1, c2);
  // The same source under another problem is another candidate.
  auto pid2 = db.put_problem(problem("matmul"));
  EXPECT_NE(db.put_candidate(pid2, src, "file", "k.cu"), c1);

  auto rec = db.get_candidate(c1);
  ASSERT_TRUE(rec);
  EXPECT_EQ(rec->id, c1);
  EXPECT_EQ(rec->problem_id, pid);
  EXPECT_EQ(rec->hash, kforge::sha256_hex(src));
  EXPECT_EQ(rec->source, src);
  EXPECT_EQ(rec->origin, "file"); // the first insert wins
  EXPECT_EQ(rec->label, "k.cu");
  EXPECT_FALSE(rec->parent_id);
  EXPECT_TRUE(is_iso_utc_ms(rec->created_at)) << rec->created_at;
  EXPECT_FALSE(db.get_candidate(c1 + 1000));
}

TEST_F(StoreTest, CandidateParentLinks) {
  store db(db_path());
  auto pid = db.put_problem(problem());
  auto root = db.put_candidate(pid, "v0", "seed", "seed.cu");
  auto child = db.put_candidate(pid, "v1", "llm", "gen1", root);
  auto grandchild = db.put_candidate(pid, "v2", "tuner", "gen2", child);
  EXPECT_FALSE(db.get_candidate(root)->parent_id);
  EXPECT_EQ(db.get_candidate(child)->parent_id, root);
  EXPECT_EQ(db.get_candidate(grandchild)->parent_id, child);
}

TEST_F(StoreTest, ForeignKeysAreEnforced) {
  store db(db_path());
  auto pid = db.put_problem(problem());
  EXPECT_THROW(db.put_candidate(pid + 77, "x", "file", "x.cu"), kforge::error);
  EXPECT_THROW(db.put_candidate(pid, "x", "file", "x.cu", int64_t{12345}), kforge::error);
  try {
    db.put_check(999, {"tolerance", "", 0, true, "{}"});
    FAIL() << "check for a missing evaluation was accepted";
  } catch (const kforge::error& e) {
    EXPECT_EQ(e.kind(), kforge::error_kind::store);
    std::string what = e.what();
    EXPECT_NE(what.find(db_path().string()), std::string::npos) << what;
    EXPECT_NE(what.find("FOREIGN KEY"), std::string::npos) << what;
  }
  EXPECT_THROW(db.finish_evaluation(999, "passed", "", "{}"), kforge::error);
}

// ---------------------------------------------------------------- builds

TEST_F(StoreTest, BuildsRoundTrip) {
  store db(db_path());
  auto pid = db.put_problem(problem());
  auto cid = db.put_candidate(pid, "src", "file", "k.cu");
  kforge::store::build_record a;
  a.candidate_id = cid;
  a.role = "candidate";
  a.compiler = "nvcc: NVIDIA (R) Cuda compiler driver";
  a.flags = "nvcc -O3 -arch=sm_90 -o k.so k.cu";
  a.cache_key = "abc123";
  a.ok = true;
  a.cached = false;
  a.diagnostics = "warning: unused variable 'x'\n";
  a.duration_s = 3.25;
  kforge::store::build_record b = a;
  b.role = "reference";
  b.ok = false;
  b.cached = true;
  b.diagnostics = "error: 'y' undeclared";
  b.duration_s = 0.5;
  b.created_at = "2026-01-02T03:04:05.678Z";
  auto ida = db.put_build(a);
  auto idb = db.put_build(b);
  EXPECT_NE(ida, idb);

  auto builds = db.builds_of(cid);
  ASSERT_EQ(builds.size(), 2u);
  EXPECT_EQ(builds[0].id, ida);
  EXPECT_EQ(builds[0].candidate_id, cid);
  EXPECT_EQ(builds[0].role, "candidate");
  EXPECT_EQ(builds[0].compiler, a.compiler);
  EXPECT_EQ(builds[0].flags, a.flags);
  EXPECT_EQ(builds[0].cache_key, "abc123");
  EXPECT_TRUE(builds[0].ok);
  EXPECT_FALSE(builds[0].cached);
  EXPECT_EQ(builds[0].diagnostics, a.diagnostics);
  EXPECT_DOUBLE_EQ(builds[0].duration_s, 3.25);
  EXPECT_TRUE(is_iso_utc_ms(builds[0].created_at)) << builds[0].created_at;
  EXPECT_EQ(builds[1].id, idb);
  EXPECT_EQ(builds[1].role, "reference");
  EXPECT_FALSE(builds[1].ok);
  EXPECT_TRUE(builds[1].cached);
  EXPECT_EQ(builds[1].diagnostics, b.diagnostics);
  EXPECT_EQ(builds[1].created_at, b.created_at);
  EXPECT_TRUE(db.builds_of(cid + 1).empty());
}

// ---------------------------------------------------------------- evaluations

TEST_F(StoreTest, EvaluationRoundTrip) {
  store db(db_path());
  auto pid = db.put_problem(problem());
  auto cid = db.put_candidate(pid, "src", "file", "k.cu");
  kforge::store::build_record b;
  b.candidate_id = cid;
  b.role = "candidate";
  b.ok = true;
  auto bid = db.put_build(b);

  auto eid = db.begin_evaluation(cid, bid, R"({"trials":3})");
  {
    auto running = db.get_evaluation(eid);
    ASSERT_TRUE(running);
    EXPECT_EQ(running->status, "running");
    EXPECT_TRUE(running->finished_at.empty());
    EXPECT_TRUE(is_iso_utc_ms(running->started_at)) << running->started_at;
  }
  db.put_check(eid, {"tolerance", "normal", 0, true, "{}"});
  db.put_check(eid, {"tolerance", "uniform", 1, false, R"({"element":7,"value":1.5,"expected":1.0})"});
  db.put_check(eid, {"inputs_unchanged", "", -1, true, ""});
  db.put_timing(eid, timing("reference", 2e-3));
  db.put_timing(eid, timing("candidate", 1e-3));
  db.put_timing(eid, timing("torch", 1.5e-3));
  db.finish_evaluation(eid, "failed", "tolerance failed on case uniform", R"({"status":"failed"})");

  auto e = db.get_evaluation(eid);
  ASSERT_TRUE(e);
  EXPECT_EQ(e->id, eid);
  EXPECT_EQ(e->candidate_id, cid);
  EXPECT_EQ(e->build_id, bid);
  EXPECT_EQ(e->status, "failed");
  EXPECT_EQ(e->message, "tolerance failed on case uniform");
  EXPECT_EQ(e->config_json, R"({"trials":3})");
  EXPECT_EQ(e->summary_json, R"({"status":"failed"})");
  EXPECT_TRUE(is_iso_utc_ms(e->finished_at)) << e->finished_at;
  EXPECT_LE(e->started_at, e->finished_at);

  ASSERT_EQ(e->checks.size(), 3u);
  EXPECT_EQ(e->checks[0].name, "tolerance");
  EXPECT_EQ(e->checks[0].case_name, "normal");
  EXPECT_EQ(e->checks[0].trial, 0);
  EXPECT_TRUE(e->checks[0].passed);
  EXPECT_EQ(e->checks[1].case_name, "uniform");
  EXPECT_EQ(e->checks[1].trial, 1);
  EXPECT_FALSE(e->checks[1].passed);
  EXPECT_EQ(e->checks[1].detail_json, R"({"element":7,"value":1.5,"expected":1.0})");
  EXPECT_EQ(e->checks[2].name, "inputs_unchanged");
  EXPECT_EQ(e->checks[2].trial, -1);

  ASSERT_EQ(e->timings.size(), 3u);
  EXPECT_EQ(e->timings[0].subject, "reference");
  EXPECT_EQ(e->timings[1].subject, "candidate");
  EXPECT_EQ(e->timings[2].subject, "torch");
  const auto& t = e->timings[1];
  auto want = timing("candidate", 1e-3);
  EXPECT_EQ(t.samples, want.samples);
  EXPECT_DOUBLE_EQ(t.median_s, want.median_s);
  EXPECT_DOUBLE_EQ(t.mean_s, want.mean_s);
  EXPECT_DOUBLE_EQ(t.min_s, want.min_s);
  EXPECT_DOUBLE_EQ(t.max_s, want.max_s);
  EXPECT_DOUBLE_EQ(t.stdev_s, want.stdev_s);
  EXPECT_DOUBLE_EQ(t.ci_rel, want.ci_rel);
  EXPECT_DOUBLE_EQ(t.p10_s, want.p10_s);
  EXPECT_DOUBLE_EQ(t.p90_s, want.p90_s);

  EXPECT_FALSE(db.get_evaluation(eid + 100));
}

TEST_F(StoreTest, EvaluationWithoutBuild) {
  store db(db_path());
  auto cid = db.put_candidate(db.put_problem(problem()), "src", "file", "k.cu");
  auto eid = db.begin_evaluation(cid, std::nullopt, "{}");
  db.finish_evaluation(eid, "build_failed", "nvcc: error", "{}");
  auto e = db.get_evaluation(eid);
  ASSERT_TRUE(e);
  EXPECT_FALSE(e->build_id);
  EXPECT_EQ(e->status, "build_failed");
  EXPECT_TRUE(e->checks.empty());
  EXPECT_TRUE(e->timings.empty());
}

TEST_F(StoreTest, ListOrderingFilteringAndMedians) {
  store db(db_path());
  auto soft = db.put_problem(problem("softmax"));
  auto mm = db.put_problem(problem("matmul"));
  auto cs = db.put_candidate(soft, "s1", "file", "s1.cu");
  auto cm = db.put_candidate(mm, "m1", "llm", "m1.cu");

  auto e1 = db.begin_evaluation(cs, std::nullopt, "{}");
  db.put_timing(e1, timing("candidate", 1e-3));
  db.put_timing(e1, timing("reference", 4e-3));
  db.finish_evaluation(e1, "passed", "", "{}");
  auto e2 = db.begin_evaluation(cm, std::nullopt, "{}");
  db.put_timing(e2, timing("reference", 9e-3)); // no candidate timing
  db.finish_evaluation(e2, "failed", "wrong", "{}");
  auto e3 = db.begin_evaluation(cs, std::nullopt, "{}");
  db.finish_evaluation(e3, "crashed", "SIGSEGV", "{}");

  auto all = db.list_evaluations();
  ASSERT_EQ(all.size(), 3u);
  EXPECT_EQ(all[0].id, e3);
  EXPECT_EQ(all[1].id, e2);
  EXPECT_EQ(all[2].id, e1);

  EXPECT_EQ(all[2].problem, "softmax");
  EXPECT_EQ(all[2].candidate_id, cs);
  EXPECT_EQ(all[2].candidate_label, "s1.cu");
  EXPECT_EQ(all[2].candidate_hash, kforge::sha256_hex("s1"));
  EXPECT_EQ(all[2].status, "passed");
  ASSERT_TRUE(all[2].candidate_median_s);
  ASSERT_TRUE(all[2].reference_median_s);
  EXPECT_DOUBLE_EQ(*all[2].candidate_median_s, 1e-3);
  EXPECT_DOUBLE_EQ(*all[2].reference_median_s, 4e-3);
  EXPECT_TRUE(is_iso_utc_ms(all[2].started_at));

  EXPECT_EQ(all[1].problem, "matmul");
  EXPECT_EQ(all[1].message, "wrong");
  EXPECT_FALSE(all[1].candidate_median_s);
  ASSERT_TRUE(all[1].reference_median_s);
  EXPECT_DOUBLE_EQ(*all[1].reference_median_s, 9e-3);

  EXPECT_EQ(all[0].status, "crashed");
  EXPECT_FALSE(all[0].candidate_median_s);
  EXPECT_FALSE(all[0].reference_median_s);

  auto softs = db.list_evaluations("softmax");
  ASSERT_EQ(softs.size(), 2u);
  EXPECT_EQ(softs[0].id, e3);
  EXPECT_EQ(softs[1].id, e1);
  auto mms = db.list_evaluations("matmul");
  ASSERT_EQ(mms.size(), 1u);
  EXPECT_EQ(mms[0].id, e2);
  EXPECT_TRUE(db.list_evaluations("nope").empty());

  auto limited = db.list_evaluations("", 2);
  ASSERT_EQ(limited.size(), 2u);
  EXPECT_EQ(limited[0].id, e3);
  EXPECT_EQ(limited[1].id, e2);
  EXPECT_EQ(db.list_evaluations("", 0).size(), 3u);
}

TEST_F(StoreTest, ListAppliesDefaultLimit) {
  store db(db_path());
  auto cid = db.put_candidate(db.put_problem(problem()), "src", "file", "k.cu");
  for (int i = 0; i < 25; ++i) db.begin_evaluation(cid, std::nullopt, "{}");
  EXPECT_EQ(db.list_evaluations().size(), 20u);
  EXPECT_EQ(db.list_evaluations("", 100).size(), 25u);
}

TEST_F(StoreTest, UnfinishedEvaluationStaysRunningAndListed) {
  int64_t eid = 0;
  {
    store db(db_path());
    auto cid = db.put_candidate(db.put_problem(problem()), "src", "file", "k.cu");
    eid = db.begin_evaluation(cid, std::nullopt, "{}");
    db.put_check(eid, {"tolerance", "normal", 0, true, "{}"});
  }
  store db(db_path());
  auto e = db.get_evaluation(eid);
  ASSERT_TRUE(e);
  EXPECT_EQ(e->status, "running");
  EXPECT_TRUE(e->finished_at.empty());
  EXPECT_EQ(e->checks.size(), 1u);
  auto list = db.list_evaluations();
  ASSERT_EQ(list.size(), 1u);
  EXPECT_EQ(list[0].id, eid);
  EXPECT_EQ(list[0].status, "running");
}

TEST_F(StoreTest, ValuesAreBoundNotSpliced) {
  store db(db_path());
  const std::string nasty = "x'); DROP TABLE problems; --";
  auto pid = db.put_problem(problem(nasty, nasty));
  EXPECT_EQ(db.put_problem(problem(nasty, nasty)), pid);
  auto cid = db.put_candidate(pid, std::string("a\0b", 3), nasty, nasty);
  auto c = db.get_candidate(cid);
  ASSERT_TRUE(c);
  EXPECT_EQ(c->source, std::string("a\0b", 3));
  EXPECT_EQ(c->label, nasty);
  auto eid = db.begin_evaluation(cid, std::nullopt, "{}");
  ASSERT_EQ(db.list_evaluations(nasty).size(), 1u);
  EXPECT_EQ(db.list_evaluations(nasty)[0].id, eid);
}

// ---------------------------------------------------------------- processes

namespace {

/// Waits for `pid`; @return its wait status.
int wait_for(pid_t pid) {
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0) {
  }
  return status;
}

/// Runs `work` in a child process that opens the store at `path` first (no connection
/// crosses the fork), then dies by SIGKILL still holding it open.
/// @return the child's pid; -1, with a test failure, when it ended any other way.
pid_t die_holding(const fs::path& path, const std::function<void(store&)>& work) {
  const pid_t child = ::fork();
  if (child < 0) {
    ADD_FAILURE() << "fork failed";
    return -1;
  }
  if (child == 0) {
    try {
      auto* db = new store(path); // never closed: the process dies holding it
      work(*db);
    } catch (...) {
      ::_exit(3);
    }
    ::raise(SIGKILL);
    ::_exit(4); // not reached
  }
  const int status = wait_for(child);
  if (!WIFSIGNALED(status) || WTERMSIG(status) != SIGKILL) {
    ADD_FAILURE() << "child exited with " << (WIFEXITED(status) ? WEXITSTATUS(status) : -1) << ", not by SIGKILL";
    return -1;
  }
  return child;
}

} // namespace

TEST_F(StoreTest, WritesSurviveAKilledProcess) {
  // The child must be the first to open the file: no connection crosses the fork.
  const fs::path path = db_path();
  ASSERT_GT(die_holding(path,
                        [&](store& db) {
                          auto cid = db.put_candidate(db.put_problem(problem()), "src", "file", "k.cu");
                          auto done = db.begin_evaluation(cid, std::nullopt, R"({"n":1})");
                          db.put_check(done, {"tolerance", "normal", 0, true, "{}"});
                          db.put_timing(done, timing("candidate", 1e-3));
                          db.finish_evaluation(done, "passed", "ok", R"({"status":"passed"})");
                          auto begun = db.begin_evaluation(cid, std::nullopt, R"({"n":2})");
                          db.put_check(begun, {"tolerance", "normal", 0, false, "{}"});
                        }),
            0);

  store db(path);
  auto list = db.list_evaluations();
  ASSERT_EQ(list.size(), 2u);
  auto begun = db.get_evaluation(list[0].id);
  auto done = db.get_evaluation(list[1].id);
  ASSERT_TRUE(done);
  ASSERT_TRUE(begun);
  EXPECT_EQ(done->status, "passed");
  EXPECT_EQ(done->message, "ok");
  EXPECT_EQ(done->config_json, R"({"n":1})");
  EXPECT_EQ(done->summary_json, R"({"status":"passed"})");
  EXPECT_TRUE(is_iso_utc_ms(done->finished_at));
  EXPECT_EQ(done->checks.size(), 1u);
  ASSERT_EQ(done->timings.size(), 1u);
  EXPECT_DOUBLE_EQ(done->timings[0].median_s, 1e-3);
  EXPECT_EQ(begun->status, "interrupted"); // its process is gone: marked on this open
  EXPECT_TRUE(begun->finished_at.empty());
  EXPECT_EQ(begun->config_json, R"({"n":2})");
  EXPECT_EQ(begun->checks.size(), 1u);
  ASSERT_TRUE(list[1].candidate_median_s);
  EXPECT_EQ(list[0].status, "interrupted");
}

TEST_F(StoreTest, ConcurrentProcessesShareOneFile) {
  // Several processes open the same fresh file at once (racing the migration) and
  // write interleaved; the busy timeout serializes them and nothing is lost.
  const fs::path path = db_path();
  constexpr int procs = 4, evals = 40;
  std::vector<pid_t> children;
  for (int p = 0; p < procs; ++p) {
    pid_t child = ::fork();
    ASSERT_GE(child, 0);
    if (child == 0) {
      try {
        store db(path);
        auto pid = db.put_problem(problem()); // the same problem from every process
        auto cid = db.put_candidate(pid, "src" + std::to_string(p), "file", "k.cu");
        for (int i = 0; i < evals; ++i) {
          auto eid = db.begin_evaluation(cid, std::nullopt, "{}");
          db.put_check(eid, {"tolerance", "", i, true, "{}"});
          db.finish_evaluation(eid, "passed", "", "{}");
        }
      } catch (const std::exception& e) {
        std::fprintf(stderr, "child %d: %s\n", p, e.what());
        ::_exit(1);
      }
      ::_exit(0);
    }
    children.push_back(child);
  }
  for (pid_t c : children) {
    int status = wait_for(c);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  }
  store db(path);
  EXPECT_EQ(db.schema_version(), store::latest_schema_version);
  EXPECT_EQ(db.list_evaluations("", 0).size(), static_cast<size_t>(procs * evals));
  EXPECT_EQ(raw_query(path, "SELECT count(*) FROM problems"), std::vector<std::string>{"1"});
  EXPECT_EQ(raw_query(path, "SELECT count(*) FROM checks"), std::vector<std::string>{std::to_string(procs * evals)});
}

TEST_F(StoreTest, ResourceReportRoundTripsAndVersion1Migrates) {
  {
    store db(db_path());
    auto cid = db.put_candidate(db.put_problem(problem()), "src", "file", "k.cu");
    kforge::store::build_record b;
    b.candidate_id = cid;
    b.role = "candidate";
    b.resources_json = R"([{"kernel":"k","registers":32}])";
    db.put_build(b);
    EXPECT_EQ(db.builds_of(cid).at(0).resources_json, b.resources_json);
  }
  // Make the file a version-1 database (no resources column), then reopen: it migrates
  // forward and the old build reads back with an empty report.
  raw_query(db_path(), "ALTER TABLE builds DROP COLUMN resources_json");
  for (const char* t : {"profiles", "proposals", "run_evaluations", "ideas", "llm_calls", "runs"})
    raw_query(db_path(), std::string("DROP TABLE ") + t); // versions 3 and 4
  raw_query(db_path(), "ALTER TABLE evaluations DROP COLUMN device_index");
  raw_query(db_path(), "ALTER TABLE evaluations DROP COLUMN device");
  for (const char* c : {"hypothesis", "predicted_s", "kept"}) // version 5
    raw_query(db_path(), std::string("ALTER TABLE evaluations DROP COLUMN ") + c);
  raw_query(db_path(), "DROP INDEX evaluations_running"); // version 6
  raw_query(db_path(), "ALTER TABLE evaluations DROP COLUMN owner");
  raw_query(db_path(), "ALTER TABLE builds DROP COLUMN sha256");
  raw_query(db_path(), "ALTER TABLE builds DROP COLUMN cache_note");
  raw_query(db_path(), "PRAGMA user_version = 1");
  store db(db_path());
  EXPECT_EQ(db.schema_version(), store::latest_schema_version);
  auto builds = db.builds_of(1);
  ASSERT_EQ(builds.size(), 1u);
  EXPECT_EQ(builds[0].resources_json, "[]");
  EXPECT_EQ(builds[0].sha256, "");
}

TEST_F(StoreTest, Version5RowsLeftRunningAreNotGuessedAbout) {
  // A "running" row written before owners were recorded: nobody can tell whether its
  // process lives, so migrating and reopening leave it as it is.
  {
    store db(db_path());
    auto cid = db.put_candidate(db.put_problem(problem()), "src", "file", "k.cu");
    db.begin_evaluation(cid, std::nullopt, "{}");
  }
  raw_query(db_path(), "UPDATE evaluations SET owner = ''");
  raw_query(db_path(), "DROP INDEX evaluations_running");
  raw_query(db_path(), "ALTER TABLE evaluations DROP COLUMN owner");
  raw_query(db_path(), "ALTER TABLE builds DROP COLUMN sha256");
  raw_query(db_path(), "ALTER TABLE builds DROP COLUMN cache_note");
  raw_query(db_path(), "ALTER TABLE llm_calls DROP COLUMN usage_source"); // version 7
  raw_query(db_path(), "ALTER TABLE runs DROP COLUMN owner");
  raw_query(db_path(), "PRAGMA user_version = 5");
  store db(db_path());
  EXPECT_EQ(db.schema_version(), store::latest_schema_version);
  EXPECT_EQ(db.list_evaluations().at(0).status, "running");
}

// ---------------------------------------------------------------- interrupted evaluations

TEST_F(StoreTest, ARunOfAKilledKforgeIsMarkedInterruptedOnOpenAndResumable) {
  const fs::path path = db_path();
  const pid_t child = die_holding(
      path, [&](store& db) { (void)db.begin_run(db.put_problem(problem()), "refine", R"({"who":"child"})"); });
  ASSERT_GT(child, 0);
  EXPECT_EQ(raw_query(path, "SELECT status FROM runs"), std::vector<std::string>{"running"});
  store db(path);
  auto run = db.list_runs().at(0);
  EXPECT_EQ(run.status, "interrupted");
  EXPECT_NE(run.stop_reason.find("pid " + std::to_string(child)), std::string::npos) << run.stop_reason;
  // Resumed by this process: running again, owned by it, left alone by a later open.
  db.resume_run(run.id);
  store again(path);
  EXPECT_EQ(again.get_run(run.id)->status, "running");
  EXPECT_EQ(again.get_run(run.id)->resumes, 1);
  EXPECT_EQ(again.get_run(run.id)->owner, kforge::to_string(kforge::current_process_owner()));
}

TEST_F(StoreTest, AnLlmCallSaysWhetherItsTokensWereEstimated) {
  store db(db_path());
  const auto run = db.begin_run(db.put_problem(problem()), "refine", "{}");
  kforge::store::llm_call_record c;
  c.run_id = run;
  c.role = "code";
  c.provider = "openai:gemma";
  c.input_tokens = 700;
  c.output_tokens = 300;
  db.put_llm_call(c);
  c.usage_source = "estimated";
  db.put_llm_call(c);
  auto calls = db.llm_calls_of(run);
  ASSERT_EQ(calls.size(), 2u);
  EXPECT_EQ(calls[0].usage_source, "reported");
  EXPECT_EQ(calls[1].usage_source, "estimated");
  const auto t = db.llm_totals_of(run);
  EXPECT_EQ(t.input_tokens + t.output_tokens, 2000);
  EXPECT_EQ(t.estimated_calls, 1);
}

TEST_F(StoreTest, AnEvaluationOfAKilledKforgeIsMarkedInterruptedOnOpen) {
  // The child must be the first to open the file: no connection crosses the fork.
  const fs::path path = db_path();
  const pid_t child = die_holding(path, [&](store& db) {
    auto cid = db.put_candidate(db.put_problem(problem()), "src", "file", "k.cu");
    auto eid = db.begin_evaluation(cid, std::nullopt, R"({"who":"child"})");
    db.put_check(eid, {"tolerance", "normal", 0, true, "{}"});
  });
  ASSERT_GT(child, 0);
  // Until someone opens the store, the killed evaluation still reads "running".
  EXPECT_EQ(raw_query(path, "SELECT status FROM evaluations"), std::vector<std::string>{"running"});

  // This process opens it (marking the child's row) and starts an evaluation of its own,
  // which a second open, made while this process lives, leaves alone.
  store mine(path);
  const int64_t cid = mine.list_evaluations().at(0).candidate_id;
  const auto live = mine.begin_evaluation(cid, std::nullopt, R"({"who":"parent"})");
  store db(path);
  auto rows = db.list_evaluations();
  ASSERT_EQ(rows.size(), 2u);
  auto killed = db.get_evaluation(rows[1].id);
  ASSERT_TRUE(killed);
  EXPECT_EQ(killed->config_json, R"({"who":"child"})");
  EXPECT_EQ(killed->status, "interrupted");
  EXPECT_EQ(rows[1].status, "interrupted");
  EXPECT_NE(killed->message.find("pid " + std::to_string(child)), std::string::npos) << killed->message;
  EXPECT_EQ(killed->checks.size(), 1u); // what it recorded is kept
  EXPECT_TRUE(killed->finished_at.empty());
  EXPECT_EQ(db.get_evaluation(live)->status, "running");
  EXPECT_EQ(db.mark_interrupted_evaluations(), 0); // nothing more to mark

  // The search's result cache never reuses an interrupted evaluation.
  EXPECT_FALSE(db.find_evaluation(cid, "", R"({"who":"child"})"));
  mine.finish_evaluation(live, "passed", "", "{}");
  EXPECT_EQ(db.get_evaluation(live)->status, "passed");
}

TEST_F(StoreTest, AReusedPidOrARebootMeansTheOwnerIsGoneAnotherHostIsLeftAlone) {
  store db(db_path());
  auto cid = db.put_candidate(db.put_problem(problem()), "src", "file", "k.cu");
  const auto reused = db.begin_evaluation(cid, std::nullopt, "{}");
  const auto rebooted = db.begin_evaluation(cid, std::nullopt, "{}");
  const auto elsewhere = db.begin_evaluation(cid, std::nullopt, "{}");
  const auto garbled = db.begin_evaluation(cid, std::nullopt, "{}");
  auto me = kforge::current_process_owner();
  auto set_owner = [&](int64_t id, const std::string& owner) {
    raw_query(db_path(), "UPDATE evaluations SET owner = '" + owner + "' WHERE id = " + std::to_string(id));
  };
  auto o = me;
  o.start_ticks += 7; // our pid, but not our process
  set_owner(reused, kforge::to_string(o));
  o = me;
  o.boot_id = "00000000-0000-0000-0000-000000000000";
  set_owner(rebooted, kforge::to_string(o));
  o = me;
  o.host = "another-host";
  o.start_ticks += 7;
  set_owner(elsewhere, kforge::to_string(o));
  set_owner(garbled, "not an owner");
  EXPECT_EQ(db.mark_interrupted_evaluations(), 2);
  EXPECT_EQ(db.get_evaluation(reused)->status, "interrupted");
  EXPECT_EQ(db.get_evaluation(rebooted)->status, "interrupted");
  EXPECT_EQ(db.get_evaluation(elsewhere)->status, "running");
  EXPECT_EQ(db.get_evaluation(garbled)->status, "running");
}

TEST_F(StoreTest, WorkOfACancelledCallIsMarkedCancelledAndOnlyItsOwners) {
  store db(db_path());
  auto cid = db.put_candidate(db.put_problem(problem()), "src", "file", "k.cu");
  const auto theirs = db.begin_evaluation(cid, std::nullopt, R"({"who":"child"})");
  const auto run = db.begin_run(db.put_problem(problem()), "tune", "{}");
  const auto mine = db.begin_evaluation(cid, std::nullopt, "{}");
  auto child = kforge::current_process_owner();
  child.pid += 100000; // a child that is gone
  raw_query(db_path(), "UPDATE evaluations SET owner = '" + kforge::to_string(child) + "' WHERE id = " + std::to_string(theirs));
  raw_query(db_path(), "UPDATE runs SET owner = '" + kforge::to_string(child) + "' WHERE id = " + std::to_string(run));
  EXPECT_EQ(db.mark_cancelled(child, "its MCP client cancelled the call"), 2);
  EXPECT_EQ(db.get_evaluation(theirs)->status, "cancelled");
  EXPECT_NE(db.get_evaluation(theirs)->message.find("cancelled: its MCP client"), std::string::npos);
  EXPECT_EQ(db.get_run(run)->status, "cancelled");
  EXPECT_EQ(db.get_evaluation(mine)->status, "running");
  // Marked interrupted by an open that came first: still the cancel's to name.
  const auto later = db.begin_evaluation(cid, std::nullopt, "{}");
  raw_query(db_path(), "UPDATE evaluations SET owner = '" + kforge::to_string(child) + "', status = 'interrupted' WHERE id = " +
                           std::to_string(later));
  EXPECT_EQ(db.mark_cancelled(child, "gone"), 1);
  EXPECT_EQ(db.get_evaluation(later)->status, "cancelled");
  EXPECT_FALSE(db.find_evaluation(cid, "", R"({"who":"child"})")) << "never a cached result";
}

TEST_F(StoreTest, ACandidateJudgedAgainWithAParentGetsTheParentItLacked) {
  store db(db_path());
  const auto pid = db.put_problem(problem());
  const auto parent = db.put_candidate(pid, "parent", "file", "p.cpp");
  const auto child = db.put_candidate(pid, "child", "agent", "first");
  EXPECT_FALSE(db.get_candidate(child)->parent_id);
  EXPECT_EQ(db.put_candidate(pid, "child", "agent", "second", parent), child);
  EXPECT_EQ(db.get_candidate(child)->parent_id, parent);
  EXPECT_EQ(db.get_candidate(child)->label, "first");
  EXPECT_EQ(db.put_candidate(pid, "child", "agent", "third", child), child);
  EXPECT_EQ(db.get_candidate(child)->parent_id, parent) << "a parent once set stays";
}

// ---------------------------------------------------------------- secrets and bytes

TEST_F(StoreTest, SecretsPrintedByACandidateNeverReachTheFile) {
  const std::string key = "sk-kforge-test-9f8e7d6c5b4a3210";
  ::setenv("KFORGE_STORE_TEST_API_KEY", key.c_str(), 1);
  const std::string marker = "[redacted:KFORGE_STORE_TEST_API_KEY]";
  int64_t eid = 0, cid = 0;
  {
    store db(db_path());
    cid = db.put_candidate(db.put_problem(problem()), "src", "file", "k.cu");
    kforge::store::build_record b;
    b.candidate_id = cid;
    b.role = "candidate";
    b.diagnostics = "k.cu:1: warning: " + key;
    db.put_build(b);
    eid = db.begin_evaluation(cid, std::nullopt, "{}");
    nlohmann::json detail{{"how", "SIGSEGV"}, {"output", "stolen: " + key + "\n"}};
    db.put_check(eid, {"crashed", "", -1, false, detail.dump()});
    nlohmann::json summary{{"status", "crashed"}, {"worker_output", "I print " + key}, {"n", 1.5}};
    db.finish_evaluation(eid, "crashed", "the candidate crashed; it printed " + key, summary.dump());
  }
  {
    store db(db_path());
    auto e = db.get_evaluation(eid);
    ASSERT_TRUE(e);
    EXPECT_EQ(e->message, "the candidate crashed; it printed " + marker);
    auto detail = nlohmann::json::parse(e->checks.at(0).detail_json);
    EXPECT_EQ(detail["output"], "stolen: " + marker + "\n");
    auto summary = nlohmann::json::parse(e->summary_json); // still JSON
    EXPECT_EQ(summary["worker_output"], "I print " + marker);
    EXPECT_EQ(summary["n"], 1.5);
    EXPECT_EQ(db.builds_of(cid).at(0).diagnostics, "k.cu:1: warning: " + marker);
  }
  ::unsetenv("KFORGE_STORE_TEST_API_KEY");
  // Not in the database file, its WAL, or anything else beside it.
  for (auto& f : fs::directory_iterator(m_dir))
    EXPECT_EQ(kforge::read_file(f.path()).find(key), std::string::npos) << f.path();
}

TEST_F(StoreTest, ASourceOfEveryByteRoundTripsExactlyAndTextIsMadeUtf8) {
  std::string source;
  for (int rep = 0; rep < 2; ++rep)
    for (int b = 0; b < 256; ++b) source += static_cast<char>(b);
  const std::string label = "\xff\xfe.cpp";
  int64_t cid = 0;
  {
    store db(db_path());
    cid = db.put_candidate(db.put_problem(problem()), source, "file", label);
    EXPECT_EQ(db.put_candidate(db.put_problem(problem()), source, "file", label), cid);
  }
  store db(db_path());
  auto c = db.get_candidate(cid);
  ASSERT_TRUE(c);
  EXPECT_EQ(c->source.size(), 512u);
  EXPECT_EQ(c->source, source);
  EXPECT_EQ(c->hash, kforge::sha256_hex(source));
  // A label is text: its stray bytes are stored as U+FFFD, so every reader can show it.
  EXPECT_EQ(c->label, "\xEF\xBF\xBD\xEF\xBF\xBD.cpp");
  EXPECT_NO_THROW((void)nlohmann::json(c->label).dump());
}

TEST_F(StoreTest, BuildsKeepTheArtifactSha256AndTheCacheNote) {
  store db(db_path());
  auto cid = db.put_candidate(db.put_problem(problem()), "src", "file", "k.cu");
  kforge::store::build_record b;
  b.candidate_id = cid;
  b.role = "reference";
  b.ok = true;
  b.sha256 = kforge::sha256_hex("kernel bytes");
  b.cache_note = "cached kernel.so did not match its recorded sha256 (the cache was modified); rebuilt";
  db.put_build(b);
  auto back = db.builds_of(cid).at(0);
  EXPECT_EQ(back.sha256, b.sha256);
  EXPECT_EQ(back.cache_note, b.cache_note);
}
