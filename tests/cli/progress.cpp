// What long commands show while they run (cli/progress.hpp): the time left against a
// budget, eval's phase lines, and optimize's line per evaluation.
#include "cli/progress.hpp"

#include <gtest/gtest.h>

#include <sstream>

using namespace kforge;
using nlohmann::json;

TEST(progress, eta_is_the_soonest_budget_at_the_pace_so_far) {
  EXPECT_FALSE(cli::eta_s({}));                                                     // no budget
  EXPECT_FALSE(cli::eta_s({.elapsed_s = 10, .max_evaluations = 40}));               // nothing spent yet
  EXPECT_DOUBLE_EQ(*cli::eta_s({.elapsed_s = 10, .evaluations = 5, .max_evaluations = 40}), 70);
  EXPECT_DOUBLE_EQ(*cli::eta_s({.elapsed_s = 10, .evaluations = 5, .max_evaluations = 40, .max_wall_s = 60}), 50);
  EXPECT_DOUBLE_EQ(*cli::eta_s({.elapsed_s = 10, .evaluations = 5, .max_evaluations = 40, .tokens = 1000,
                                .max_tokens = 2000}),
                   10)
      << "tokens run out first";
  EXPECT_DOUBLE_EQ(*cli::eta_s({.elapsed_s = 100, .max_wall_s = 60}), 0) << "never negative";
  // Rounds: projected from when the last round ended, so the estimate falls while one runs.
  EXPECT_DOUBLE_EQ(*cli::eta_s({.elapsed_s = 40, .rounds = 1, .max_rounds = 2, .rounds_at_s = 30}), 20);
  EXPECT_DOUBLE_EQ(*cli::eta_s({.elapsed_s = 50, .rounds = 1, .max_rounds = 2, .rounds_at_s = 30}), 10);
}

TEST(progress, durations_read_as_people_write_them) {
  EXPECT_EQ(cli::format_duration(42.4), "42s");
  EXPECT_EQ(cli::format_duration(65), "1m05s");
  EXPECT_EQ(cli::format_duration(7380), "2h03m");
  EXPECT_EQ(cli::format_duration(-3), "0s");
}

TEST(progress, eval_phases_are_plain_lines_off_a_terminal) {
  std::ostringstream out;
  cli::phase_printer show(out, false);
  show("build", std::nullopt);
  show("build", 1.5);
  show("verify", std::nullopt);
  show("verify", 0.002);
  EXPECT_EQ(out.str(), "  build    1.500 s\n  verify   2.000 ms\n");
  std::ostringstream tty;
  cli::phase_printer live(tty, true);
  live("oracle", std::nullopt);
  live("oracle", 0.5);
  EXPECT_EQ(tty.str(), "\r\033[K  oracle   ...\r\033[K  oracle   500.000 ms\n");
}

TEST(progress, the_search_ticker_says_where_the_run_stands_after_each_evaluation) {
  search::search_options o;
  o.max_evaluations = 40;
  cli::search_ticker t(o);
  EXPECT_FALSE(t.on_event({{"event", "run"}, {"run", 1}}));
  auto first = t.on_event({{"event", "evaluation"}, {"status", "build_failed"}});
  ASSERT_TRUE(first);
  EXPECT_EQ(first->substr(0, 24), "  evals 1/40  best -  0s");
  EXPECT_FALSE(t.on_event({{"event", "best"}, {"median_s", 0.0176583}, {"speedup", 1.8961}}));
  EXPECT_FALSE(t.on_event({{"event", "llm_call"}, {"input_tokens", 12000}, {"output_tokens", 450}}));
  auto second = t.on_event({{"event", "evaluation"}, {"status", "passed"}});
  ASSERT_TRUE(second);
  EXPECT_NE(second->find("evals 2/40  best 17.658 ms 1.90x  tokens 12.4k"), std::string::npos) << *second;
  EXPECT_FALSE(t.on_event({{"event", "evaluation"}, {"status", "not_run"}})) << "the budget was spent: nothing ran";
  EXPECT_EQ(t.use().evaluations, 2);
  // A round's totals are the session's own count.
  (void)t.on_event({{"event", "round"}, {"round", 1}, {"evaluations", 7}, {"tokens", 15495}, {"cost_usd", 0.25}});
  EXPECT_EQ(t.use().evaluations, 7);
  EXPECT_EQ(t.use().tokens, 15495);
}
