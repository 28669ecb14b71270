// The search engine on a real GPU (label: gpu): tune the softmax seed's block size, and a
// replayed branch search whose best is run under compute-sanitizer before it is accepted.
#include "device/backend.hpp"
#include "llm/config.hpp"
#include "problem/problem.hpp"
#include "search/llm_gateway.hpp"
#include "search/strategy.hpp"
#include "test_util.hpp"

#include <gtest/gtest.h>

using namespace kforge;

namespace {

problem::problem small() { return problem::load(test::source_dir() / "tests" / "gpu" / "problems" / "softmax_small"); }

search::search_options quick(const std::string& strategy) {
  search::search_options o;
  o.strategy = strategy;
  o.seed = 11;
  o.trials = 1;
  o.time_budget_s = 0.3;
  return o;
}

} // namespace

TEST(gpu_search, tune_finds_a_block_size_and_records_the_device) {
  test::temp_dir dir;
  store::store db(dir / "k.db");
  const auto p = small();
  auto opts = quick("tune");
  opts.sanitize_best = false;
  search::session s(db, p, opts);
  auto st = search::make_strategy("tune");
  search::run_search(s, *st);
  auto rows = db.run_evaluations(s.run_id());
  ASSERT_EQ(rows.size(), 4u); // THREADS in {128, 256, 512, 1024}
  for (auto& r : rows) {
    EXPECT_EQ(r.status, "passed") << r.message;
    EXPECT_GE(r.device_index, 0);
    EXPECT_LT(r.device_index, device::device_count(problem::backend_kind::cuda));
  }
  EXPECT_TRUE(db.get_run(s.run_id())->best_candidate_id);
}

TEST(gpu_search, a_replayed_branch_search_keeps_a_sanitized_correct_best) {
  test::temp_dir dir;
  store::store db(dir / "k.db");
  const auto p = small();
  llm::llm_config cfg;
  cfg.models.push_back({.spec = "replay:" + (test::source_dir() / "tests/gpu/data/softmax_branch.llm.jsonl").string()});
  auto opts = quick("branch");
  opts.ideas = 2;
  opts.implementations = 2;
  opts.keep = 1;
  opts.max_rounds = 1; // one branching round after the seed
  opts.patience = 0;
  opts.tune_budget = 2;
  search::session s(db, p, opts, {}, search::make_llm_gateway(db, cfg, {}, 3));
  auto st = search::make_strategy("branch");
  search::run_search(s, *st);
  auto run = db.get_run(s.run_id());
  ASSERT_TRUE(run && run->best_candidate_id) << (run ? run->stop_reason : "no run");
  auto best = db.get_candidate(*run->best_candidate_id);
  EXPECT_EQ(best->source.find("softmax_nomax"), std::string::npos) << "the kernel without max subtraction fails";
  std::map<std::string, int> statuses;
  for (auto& r : db.run_evaluations(s.run_id())) ++statuses[r.status];
  EXPECT_GE(statuses["passed"], 3);
  EXPECT_GE(statuses["nonfinite"] + statuses["tolerance"], 1);
  // The accepted best went through compute-sanitizer (when the machine has it).
  auto ev = db.get_evaluation(*run->best_evaluation_id);
  int sanitize_checks = 0;
  for (auto& c : ev->checks)
    if (c.name.rfind("sanitize_", 0) == 0) {
      ++sanitize_checks;
      EXPECT_TRUE(c.passed) << c.name << " " << c.detail_json;
    }
  std::cout << "best: " << best->label << ", sanitize checks on it: " << sanitize_checks << "\n";
}
