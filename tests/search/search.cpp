// The search engine on the CPU backend: the scheduler's lanes, the tune strategy, resume
// after a kill, and a replayed multi-round branch search reaching its recorded best.
// To add a strategy test: build a session over a temp database (fixture below), run the
// strategy through run_search, and assert on what the database holds.
#include "llm/config.hpp"
#include "problem/problem.hpp"
#include "search/llm_gateway.hpp"
#include "search/strategy.hpp"
#include "test_util.hpp"

#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <set>
#include <thread>

using namespace kforge;
namespace fs = std::filesystem;

namespace {

class search_test : public ::testing::Test {
protected:
  void SetUp() override {
    ::setenv("KFORGE_WORKER", KFORGE_WORKER_BINARY, 1);
    gelu = problem::load(fs::path(KFORGE_SOURCE_DIR) / "problems/cpu/gelu");
  }
  search::search_options quick(const std::string& strategy) {
    search::search_options o;
    o.strategy = strategy;
    o.seed = 42;
    o.trials = 1;
    o.time_budget_s = 0.2;
    o.build_jobs = 2;
    return o;
  }
  test::temp_dir dir;
  problem::problem gelu;
  std::vector<nlohmann::json> events;
  search::event_sink sink() {
    return [this](const nlohmann::json& e) {
      static std::mutex mu;
      std::lock_guard lock(mu);
      events.push_back(e);
    };
  }
};

} // namespace

TEST(scheduler, lanes_are_never_shared_and_all_are_used) {
  search::scheduler s({.devices = 3, .build_jobs = 4});
  std::vector<std::future<int>> fs;
  for (int i = 0; i < 24; ++i)
    fs.push_back(s.submit([](const search::acquire_fn& acquire) {
      std::this_thread::sleep_for(std::chrono::milliseconds(2)); // "building"
      auto lease = acquire();
      std::this_thread::sleep_for(std::chrono::milliseconds(3)); // "timing"
      return lease.ordinal;
    }));
  std::set<int> seen;
  for (auto& f : fs) seen.insert(f.get());
  EXPECT_EQ(seen, (std::set<int>{0, 1, 2}));
  auto iv = s.intervals();
  ASSERT_EQ(iv.size(), 24u);
  for (std::size_t i = 0; i < iv.size(); ++i)
    for (std::size_t j = i + 1; j < iv.size(); ++j)
      if (iv[i].lane == iv[j].lane)
        EXPECT_TRUE(iv[i].end <= iv[j].begin || iv[j].end <= iv[i].begin) << "lane " << iv[i].lane << " shared";
}

TEST(scheduler, an_exception_in_a_job_frees_its_lane) {
  search::scheduler s({.devices = 1, .build_jobs = 1});
  auto bad = s.submit([](const search::acquire_fn& acquire) -> int {
    auto lease = acquire();
    throw std::runtime_error("candidate broke the problem");
  });
  EXPECT_THROW(bad.get(), std::runtime_error);
  auto good = s.submit([](const search::acquire_fn& acquire) { return acquire().ordinal; });
  EXPECT_EQ(good.get(), 0);
}

TEST_F(search_test, tune_searches_the_seeds_parameters_by_grid) {
  store::store db(dir / "k.db");
  search::session s(db, gelu, quick("tune"), sink());
  auto st = search::make_strategy("tune");
  search::run_search(s, *st);
  auto run = db.get_run(s.run_id());
  ASSERT_TRUE(run);
  EXPECT_EQ(run->status, "finished");
  ASSERT_TRUE(run->best_candidate_id);
  auto rows = db.run_evaluations(s.run_id());
  ASSERT_EQ(rows.size(), 4u); // CHUNK in {1024, 4096, 16384, 65536}
  std::set<std::string> chunks;
  for (auto& r : rows) {
    EXPECT_EQ(r.status, "passed") << r.message;
    EXPECT_EQ(r.step, "tune");
    EXPECT_EQ(r.candidate_origin, "tuner");
    ASSERT_TRUE(r.parent_id); // the template
    chunks.insert(nlohmann::json::parse(r.params_json).at("CHUNK").dump());
  }
  EXPECT_EQ(chunks.size(), 4u);
  auto best = db.get_candidate(*run->best_candidate_id);
  EXPECT_NE(best->source.find("#define CHUNK"), std::string::npos);
  EXPECT_EQ(best->source.find("kforge: param"), std::string::npos) << "an instance declares nothing";

  // A second run judges nothing again: same sources, same settings, same device model.
  search::session again(db, gelu, quick("tune"), sink());
  search::run_search(again, *st);
  for (auto& r : db.run_evaluations(again.run_id())) EXPECT_TRUE(r.reused);
}

TEST_F(search_test, a_killed_run_resumes_with_nothing_lost_or_repeated) {
  store::store db(dir / "k.db");
  int64_t run_id = 0;
  {
    // The "killed" run: it judged the first two grid points, then died (no finish).
    search::session s(db, gelu, quick("tune"), sink());
    run_id = s.run_id();
    const auto seed = read_file(*gelu.seed);
    search::proposal prop{.source = seed, .origin = "seed", .label = "seed.cpp", .step = "seed"};
    // Judge the same first instances the strategy would: run tune with a budget of 2 by hand.
    auto opts = quick("tune");
    (void)search::tune_or_evaluate(s, prop, 2, "grid");
  }
  ASSERT_EQ(db.get_run(run_id)->status, "running");
  const auto before = db.list_evaluations("", 0).size();
  ASSERT_EQ(db.run_evaluations(run_id).size(), 2u);

  auto opts = quick("tune");
  opts.resume_run = run_id;
  search::session s(db, gelu, opts, sink());
  EXPECT_EQ(s.run_id(), run_id);
  auto st = search::make_strategy("tune");
  search::run_search(s, *st);
  EXPECT_EQ(db.get_run(run_id)->status, "finished");
  EXPECT_EQ(db.get_run(run_id)->resumes, 1);
  EXPECT_EQ(db.run_evaluations(run_id).size(), 4u) << "the two judged before are not recorded twice";
  EXPECT_EQ(db.list_evaluations("", 0).size(), before + 2) << "only the two missing points were judged";
}

TEST_F(search_test, a_replayed_branch_search_reaches_its_recorded_best) {
  store::store db(dir / "k.db");
  llm::llm_config cfg;
  cfg.models.push_back({.spec = "replay:" + (fs::path(KFORGE_TEST_DIR) / "search/data/gelu_branch.llm.jsonl").string()});
  auto gw = search::make_llm_gateway(db, cfg, {}, 7);
  auto opts = quick("branch");
  opts.ideas = 2;
  opts.implementations = 2;
  opts.keep = 1;
  opts.max_rounds = 2; // two branching rounds after the seed
  opts.patience = 0;
  opts.tune_budget = 4;
  search::session s(db, gelu, opts, sink(), gw);
  auto st = search::make_strategy("branch");
  search::run_search(s, *st);

  auto run = db.get_run(s.run_id());
  ASSERT_TRUE(run);
  EXPECT_EQ(run->status, "finished") << run->stop_reason;
  ASSERT_TRUE(run->best_candidate_id);
  // The recorded best: a correct kernel, not one of the deliberately slow ones.
  auto best = db.get_candidate(*run->best_candidate_id);
  EXPECT_EQ(best->source.find("k < 16"), std::string::npos);
  EXPECT_NE(best->source.find("std::tanh(inner)"), std::string::npos);

  auto ideas = db.ideas_of(s.run_id());
  ASSERT_EQ(ideas.size(), 4u);
  EXPECT_EQ(ideas[0].title, "Vectorise the loop");

  std::map<std::string, int> statuses;
  bool reused = false, tuned = false;
  for (auto& r : db.run_evaluations(s.run_id())) {
    ++statuses[r.status];
    reused = reused || r.reused;
    tuned = tuned || (r.step == "tune" && r.round == 2);
  }
  EXPECT_GE(statuses["tolerance"], 1) << "the cheap tanh fails the oracle";
  EXPECT_GE(statuses["build_failed"], 1);
  EXPECT_TRUE(reused) << "r2's copy of r1's kernel is answered from the cache";
  EXPECT_TRUE(tuned) << "an LLM candidate that declares parameters is tuned before it is compared";

  int malformed = 0;
  for (auto& p : db.proposals_of(s.run_id())) malformed += p.status == "malformed";
  EXPECT_EQ(malformed, 1);

  auto calls = db.llm_calls_of(s.run_id());
  EXPECT_EQ(calls.size(), 10u);
  auto totals = db.llm_totals_of(s.run_id());
  EXPECT_GT(totals.input_tokens, 10000);
  for (auto& c : calls) EXPECT_FALSE(c.replay_key.empty());

  bool saw_round = false;
  for (auto& e : events) saw_round = saw_round || e.value("event", "") == "round";
  EXPECT_TRUE(saw_round);
}

TEST_F(search_test, the_evaluation_budget_stops_a_run) {
  store::store db(dir / "k.db");
  auto opts = quick("tune");
  opts.max_evaluations = 2;
  search::session s(db, gelu, opts, sink());
  auto st = search::make_strategy("tune");
  search::run_search(s, *st);
  auto run = db.get_run(s.run_id());
  EXPECT_EQ(db.run_evaluations(s.run_id()).size(), 2u);
  EXPECT_NE(run->stop_reason.find("budget"), std::string::npos) << run->stop_reason;
}

TEST_F(search_test, refine_feeds_failures_back_and_keeps_one_lineage) {
  store::store db(dir / "k.db");
  llm::llm_config cfg;
  cfg.models.push_back({.spec = "replay:" + (fs::path(KFORGE_TEST_DIR) / "search/data/gelu_refine.llm.jsonl").string()});
  auto opts = quick("refine");
  opts.max_rounds = 2;
  opts.patience = 0;
  opts.max_fixes = 2;
  opts.tune_budget = 1;
  opts.profile_depth = 1; // round 2 asks for a profile of round 1's kernel
  search::session s(db, gelu, opts, sink(), search::make_llm_gateway(db, cfg, {}, 5));
  auto st = search::make_strategy("refine");
  search::run_search(s, *st);
  auto run = db.get_run(s.run_id());
  EXPECT_EQ(run->status, "finished") << run->stop_reason;
  std::vector<std::string> seq;
  for (auto& r : db.run_evaluations(s.run_id())) seq.push_back(r.step + ":" + r.status);
  // the seed (tuned: one instance); r1: implement fails the oracle, fix 1 passes; r2: no code (a proposal, not an
  // evaluation), fix 1 does not compile, fix 2 passes.
  EXPECT_EQ(seq, (std::vector<std::string>{"tune:passed", "implement:tolerance", "fix:passed", "fix:build_failed",
                                           "fix:passed"}));
  // The fix was asked about the failed candidate: it is the fix's parent.
  auto rows = db.run_evaluations(s.run_id());
  EXPECT_EQ(rows[2].parent_id, rows[1].candidate_id);
  EXPECT_EQ(db.llm_calls_of(s.run_id()).size(), 5u);
  // Past profile_depth the current kernel's profile is asked for; on the CPU there is none,
  // and the reason is recorded while the search goes on with timings.
  // (Which kernel is current depends on measured times: the seed's, or round 1's fix.)
  std::optional<store::profile_record> prof;
  for (auto& r : rows)
    if (auto q = db.latest_profile(r.candidate_id)) prof = q;
  ASSERT_TRUE(prof);
  EXPECT_FALSE(prof->ok);
  EXPECT_NE(prof->failure.find("GPU problem"), std::string::npos) << prof->failure;
}

TEST_F(search_test, the_token_budget_ends_a_run_cleanly) {
  store::store db(dir / "k.db");
  llm::llm_config cfg;
  cfg.models.push_back({.spec = "replay:" + (fs::path(KFORGE_TEST_DIR) / "search/data/gelu_refine.llm.jsonl").string()});
  auto opts = quick("refine");
  opts.max_tokens = 4000; // the first call spends 2400; the second is allowed, the third is refused
  opts.patience = 0;
  opts.tune_budget = 1;
  search::session s(db, gelu, opts, sink(), search::make_llm_gateway(db, cfg, {.max_tokens = opts.max_tokens}, 5));
  auto st = search::make_strategy("refine");
  search::run_search(s, *st);
  auto run = db.get_run(s.run_id());
  EXPECT_EQ(run->status, "finished");
  EXPECT_NE(run->stop_reason.find("budget"), std::string::npos) << run->stop_reason;
  auto t = db.llm_totals_of(s.run_id());
  EXPECT_LE(t.input_tokens + t.output_tokens, 4000 + 2405) << "at most the call in flight overshoots";
}

TEST_F(search_test, a_resumed_search_answers_its_finished_llm_calls_from_the_database) {
  // Split the recorded branch transcript: the first run only has round 1's answers, the
  // resumed one only round 2's. If the resume asked round 1 again, replay would refuse.
  const auto full = fs::path(KFORGE_TEST_DIR) / "search/data/gelu_branch.llm.jsonl";
  std::ifstream in(full);
  std::ofstream r1(dir / "r1.jsonl"), r2(dir / "r2.jsonl");
  for (std::string line; std::getline(in, line);)
    (line.find("branch/r1/") != std::string::npos ? r1 : r2) << line << "\n";
  r1.close();
  r2.close();
  store::store db(dir / "k.db");
  auto opts = quick("branch");
  opts.ideas = 2;
  opts.implementations = 2;
  opts.keep = 1;
  opts.max_rounds = 2;
  opts.patience = 0;
  opts.tune_budget = 4;
  int64_t run_id = 0;
  {
    llm::llm_config cfg;
    cfg.models.push_back({.spec = "replay:" + (dir / "r1.jsonl").string()});
    search::session s(db, gelu, opts, sink(), search::make_llm_gateway(db, cfg, {}, 7));
    run_id = s.run_id();
    auto st = search::make_strategy("branch");
    search::run_search(s, *st); // round 2's ideas call finds no answer: the round is lost, the run ends
  }
  const auto calls_before = db.llm_calls_of(run_id).size();
  const auto evals_before = db.run_evaluations(run_id).size();
  ASSERT_EQ(db.ideas_of(run_id).size(), 2u);

  llm::llm_config cfg;
  cfg.models.push_back({.spec = "replay:" + (dir / "r2.jsonl").string()});
  opts.resume_run = run_id;
  search::session s(db, gelu, opts, sink(), search::make_llm_gateway(db, cfg, {}, 7));
  auto st = search::make_strategy("branch");
  search::run_search(s, *st);
  EXPECT_EQ(db.get_run(run_id)->status, "finished");
  EXPECT_EQ(db.ideas_of(run_id).size(), 4u) << "round 1's ideas are not stored twice";
  EXPECT_EQ(db.llm_calls_of(run_id).size(), calls_before + 5) << "only round 2's calls are new";
  std::map<std::pair<int64_t, std::string>, int> seen;
  for (auto& r : db.run_evaluations(run_id))
    if (!r.reused) {
      const int times = ++seen[std::make_pair(r.candidate_id, r.step)];
      EXPECT_EQ(times, 1) << "candidate " << r.candidate_id << " judged twice";
    }
  EXPECT_GT(db.run_evaluations(run_id).size(), evals_before);
}

TEST_F(search_test, evolve_keeps_an_archive_per_island_and_migrates) {
  store::store db(dir / "k.db");
  llm::llm_config cfg;
  cfg.models.push_back({.spec = "replay:" + (fs::path(KFORGE_TEST_DIR) / "search/data/gelu_evolve.llm.jsonl").string()});
  auto opts = quick("evolve");
  opts.max_rounds = 2; // LLM rounds: the seed's round 0 is not counted
  opts.patience = 0;
  opts.tune_budget = 1;
  opts.islands = 2;
  opts.implementations = 2;
  opts.migrate_every = 1;
  search::session s(db, gelu, opts, sink(), search::make_llm_gateway(db, cfg, {}, 5));
  auto st = search::make_strategy("evolve");
  search::run_search(s, *st);
  auto run = db.get_run(s.run_id());
  EXPECT_EQ(run->status, "finished") << run->stop_reason;
  // Two rounds of two islands with two children each: eight calls, each from its own key.
  EXPECT_EQ(db.llm_calls_of(s.run_id()).size(), 8u);
  int evolved = 0, passed = 0;
  std::string seq;
  for (auto& r : db.run_evaluations(s.run_id())) {
    seq += r.step + ":" + r.status + " ";
    if (r.step == "evolve") {
      ++evolved;
      passed += r.status == "passed";
    }
  }
  EXPECT_GE(evolved, 6) << seq; // one answer has no code: a proposal, not an evaluation
  EXPECT_GE(passed, 3) << seq; // and the child declaring CHUNK is tuned (step "tune")
  int notes = 0;
  for (auto& e : events)
    if (e.value("event", "") == "note" && e.value("message", "").find("entered an archive") != std::string::npos) {
      ++notes;
      EXPECT_NE(e["message"].get<std::string>().find("migrated"), std::string::npos) << e.dump();
    }
  EXPECT_EQ(notes, 2);
}

TEST_F(search_test, a_resumed_evolve_search_answers_its_finished_llm_calls_from_the_database) {
  // As for branch: the first run only has round 1's answers, the resumed one round 2's.
  const auto full = fs::path(KFORGE_TEST_DIR) / "search/data/gelu_evolve.llm.jsonl";
  std::ifstream in(full);
  std::ofstream r1(dir / "r1.jsonl"), r2(dir / "r2.jsonl");
  for (std::string line; std::getline(in, line);)
    (line.find("evolve/r1/") != std::string::npos ? r1 : r2) << line << "\n";
  r1.close();
  r2.close();
  store::store db(dir / "k.db");
  auto opts = quick("evolve");
  opts.islands = 2;
  opts.implementations = 2;
  opts.migrate_every = 1;
  opts.max_rounds = 2;
  opts.patience = 0;
  opts.tune_budget = 1;
  int64_t run_id = 0;
  std::size_t ok_calls_before = 0;
  {
    llm::llm_config cfg;
    cfg.models.push_back({.spec = "replay:" + (dir / "r1.jsonl").string()});
    search::session s(db, gelu, opts, sink(), search::make_llm_gateway(db, cfg, {}, 7));
    run_id = s.run_id();
    auto st = search::make_strategy("evolve");
    search::run_search(s, *st); // round 2's calls find no answers
    for (auto& c : db.llm_calls_of(run_id)) ok_calls_before += c.error_kind.empty();
  }
  EXPECT_EQ(ok_calls_before, 4u);
  llm::llm_config cfg;
  cfg.models.push_back({.spec = "replay:" + (dir / "r2.jsonl").string()});
  opts.resume_run = run_id;
  search::session s(db, gelu, opts, sink(), search::make_llm_gateway(db, cfg, {}, 7));
  auto st = search::make_strategy("evolve");
  search::run_search(s, *st);
  EXPECT_EQ(db.get_run(run_id)->status, "finished");
  std::size_t ok_calls = 0;
  for (auto& c : db.llm_calls_of(run_id)) ok_calls += c.error_kind.empty();
  EXPECT_EQ(ok_calls, 8u) << "round 1's answers came from the database, round 2's from the new transcript";
  std::map<std::pair<int64_t, std::string>, int> seen;
  for (auto& r : db.run_evaluations(run_id))
    if (!r.reused) EXPECT_EQ(++seen[std::make_pair(r.candidate_id, r.step)], 1) << "candidate " << r.candidate_id << " judged twice";
}
