// The suite report: fast_p as KernelBench defines it (every problem in the denominator,
// correct and strictly faster than p in the numerator), its compile variant, the
// kforge.suite/1 document and the table; then `kforge suite` end to end on CPU problems.
#include "report/suite.hpp"

#include "core/error.hpp"
#include "core/fs.hpp"
#include "core/subprocess.hpp"
#include "test_util.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

using namespace kforge;
using nlohmann::json;
using report::suite_row;

namespace {

/// A row; `speedup` is reference / candidate with the candidate at 1 ms.
suite_row row(const std::string& name, const std::string& status, std::optional<double> speedup = std::nullopt,
              std::optional<double> compile_speedup = std::nullopt, bool compile = false) {
  suite_row r;
  r.problem = name;
  r.status = status;
  r.message = status == "passed" ? "passed" : "it broke";
  if (speedup) {
    r.candidate_s = 1e-3;
    r.reference_s = *speedup * 1e-3;
  }
  if (compile_speedup) {
    r.candidate_s = 1e-3;
    r.compile_s = *compile_speedup * 1e-3;
  }
  r.torch = compile;
  r.compile = compile;
  return r;
}

bool has(const std::string& s, const std::string& what) { return s.find(what) != std::string::npos; }

/// 2x, exactly 1x and 0.5x correct; a failure that kept its (impossible) times as evidence;
/// a skipped and an errored problem.
std::vector<suite_row> mixed() {
  auto failed = row("d_fails", "impossible_time", 100.0);
  return {row("a_fast", "passed", 2.0), row("b_even", "passed", 1.0),     row("c_slow", "passed", 0.5),
          failed,                       row("e_skipped", "skipped"),      row("f_error", "error")};
}

} // namespace

TEST(suite, fast_p_counts_every_problem_in_the_denominator) {
  const auto rows = mixed();
  auto f0 = report::fast_p(rows, 0);
  EXPECT_EQ(f0.denominator, 6); // failed, skipped and errored problems are problems the set did not solve
  EXPECT_EQ(f0.numerator, 3);   // fast_0: the fraction correct
  ASSERT_TRUE(f0.value);
  EXPECT_DOUBLE_EQ(*f0.value, 0.5);
  // A speedup of exactly p is not more than p: 0.5x misses p = 0.5, 1x misses p = 1, 2x misses p = 2.
  EXPECT_EQ(report::fast_p(rows, 0.5).numerator, 2);
  EXPECT_EQ(report::fast_p(rows, 1.0).numerator, 1);
  EXPECT_EQ(report::fast_p(rows, 1.5).numerator, 1);
  EXPECT_EQ(report::fast_p(rows, 2.0).numerator, 0);
  EXPECT_DOUBLE_EQ(*report::fast_p(rows, 2.0).value, 0.0);
  EXPECT_EQ(report::fast_p(rows, 2.0).denominator, 6);
  // The failure's 100x is evidence of a cheat, never a speedup.
  EXPECT_FALSE(report::speedup_over_reference(rows[3]));
  EXPECT_DOUBLE_EQ(*report::speedup_over_reference(rows[0]), 2.0);
  EXPECT_DOUBLE_EQ(*report::speedup_over(rows[2], "reference"), 0.5);
}

TEST(suite, fast_0_is_the_correctness_rate_even_without_times) {
  std::vector<suite_row> rows{row("a", "passed"), row("b", "tolerance"), row("c", "passed", 3.0), row("d", "crashed")};
  auto f = report::fast_p(rows, 0);
  EXPECT_EQ(f.numerator, 2);
  EXPECT_EQ(f.denominator, 4);
  EXPECT_EQ(report::fast_p(rows, 1).numerator, 1); // the untimed correct one claims no speedup
}

TEST(suite, fast_p_of_nothing_has_no_value) {
  auto f = report::fast_p({}, 1);
  EXPECT_EQ(f.denominator, 0);
  EXPECT_FALSE(f.value);
  EXPECT_THROW((void)report::fast_p(mixed(), 1, "cublas"), kforge::error);
}

TEST(suite, compile_denominator_holds_only_problems_with_a_compile_baseline) {
  std::vector<suite_row> rows{
      row("t_fast", "passed", 3.0, 1.2, true),       // counts: correct, 1.2x torch.compile
      row("t_fails", "tolerance", std::nullopt, std::nullopt, true), // counts: a failure is never timed
      row("t_skipped", "skipped", std::nullopt, std::nullopt, true), // counts: not solved
      row("t_no_compile", "passed", 2.0, std::nullopt, true),        // left out: torch.compile gave no time
      row("native", "passed", 4.0),                                  // left out: no torch.compile at all
      row("native_fails", "tolerance"),                              // left out
  };
  auto f0 = report::fast_p(rows, 0, "compile");
  EXPECT_EQ(f0.denominator, 3);
  EXPECT_EQ(f0.numerator, 1);
  EXPECT_EQ(report::fast_p(rows, 1, "compile").numerator, 1);
  EXPECT_EQ(report::fast_p(rows, 1.5, "compile").numerator, 0);
  EXPECT_EQ(report::fast_p(rows, 1.5, "compile").denominator, 3);
  // Against the reference every row counts.
  EXPECT_EQ(report::fast_p(rows, 0).denominator, 6);
  EXPECT_EQ(report::fast_p(rows, 1.5).numerator, 3);
  EXPECT_DOUBLE_EQ(*report::speedup_over_compile(rows[0]), 1.2);
  EXPECT_FALSE(report::speedup_over_compile(rows[4]));
  EXPECT_TRUE(report::counts_against(rows[0], "compile"));
  EXPECT_FALSE(report::counts_against(rows[3], "compile"));
  EXPECT_TRUE(report::counts_against(rows[5], "reference"));
}

TEST(suite, row_of_an_evaluation_document) {
  const json passed{{"schema", "kforge.eval/1"},
                    {"evaluation_id", 12},
                    {"status", "passed"},
                    {"message", "all checks passed"},
                    {"candidate", {{"id", 3}, {"path", "/c/relu.cu"}}},
                    {"timing",
                     {{"candidate", {{"median_s", 0.001}}},
                      {"reference", {{"median_s", 0.004}}},
                      {"torch_compile", {{"median_s", 0.002}}},
                      {"speedup", 4.0}}}};
  auto r = report::row_of_evaluation("relu", passed);
  EXPECT_EQ(r.problem, "relu");
  EXPECT_TRUE(r.passed());
  EXPECT_EQ(r.evaluation_id, 12);
  EXPECT_EQ(r.candidate, "/c/relu.cu");
  EXPECT_DOUBLE_EQ(*r.candidate_s, 0.001);
  EXPECT_DOUBLE_EQ(*r.reference_s, 0.004);
  EXPECT_DOUBLE_EQ(*r.compile_s, 0.002);
  EXPECT_DOUBLE_EQ(*report::speedup_over_compile(r), 2.0);

  const json failed{{"evaluation_id", 13}, {"status", "tolerance"}, {"message", "worst element"}, {"timing", nullptr}};
  auto f = report::row_of_evaluation("relu", failed);
  EXPECT_EQ(f.status, "tolerance");
  EXPECT_EQ(f.message, "worst element");
  EXPECT_FALSE(f.candidate_s);
  EXPECT_FALSE(f.compile_s);
  EXPECT_EQ(report::row_of_evaluation("x", json()).status, "error");
}

TEST(suite, json_document) {
  auto rows = mixed();
  rows.push_back(row("g_torch", "passed", 3.0, 1.6, true));
  rows.back().evaluation_id = 41;
  const auto j = report::suite_json(rows);
  EXPECT_EQ(j["schema"], "kforge.suite/1");
  ASSERT_EQ(j["rows"].size(), 7u);
  EXPECT_EQ(j["summary"]["problems"], 7);
  EXPECT_EQ(j["summary"]["passed"], 4);
  EXPECT_EQ(j["summary"]["failed"], 1);
  EXPECT_EQ(j["summary"]["skipped"], 1);
  EXPECT_EQ(j["summary"]["error"], 1);
  const auto& g = j["rows"][6];
  EXPECT_EQ(g["problem"], "g_torch");
  EXPECT_EQ(g["evaluation_id"], 41);
  EXPECT_TRUE(g["torch"].get<bool>());
  EXPECT_DOUBLE_EQ(g["speedup_over"]["reference"].get<double>(), 3.0);
  EXPECT_DOUBLE_EQ(g["speedup_over"]["compile"].get<double>(), 1.6);
  EXPECT_TRUE(j["rows"][3]["speedup_over"]["reference"].is_null()); // the failure's times claim nothing
  EXPECT_TRUE(j["rows"][4]["candidate_s"].is_null());

  const auto& ref = j["fast_p"]["reference"];
  EXPECT_EQ(ref["n"], 7);
  for (auto key : {"0", "0.5", "1", "1.5", "2"}) EXPECT_TRUE(ref.contains(key)) << key;
  EXPECT_DOUBLE_EQ(ref["0"].get<double>(), 4.0 / 7);
  EXPECT_DOUBLE_EQ(ref["1"].get<double>(), 2.0 / 7);
  EXPECT_EQ(ref["counts"]["2"], 1);
  const auto& cmp = j["fast_p"]["compile"];
  EXPECT_EQ(cmp["n"], 1);
  EXPECT_DOUBLE_EQ(cmp["1.5"].get<double>(), 1.0);
  EXPECT_DOUBLE_EQ(cmp["2"].get<double>(), 0.0);

  // No compile baseline anywhere: n is 0 and every value null.
  const auto none = report::suite_json(mixed());
  EXPECT_EQ(none["fast_p"]["compile"]["n"], 0);
  EXPECT_TRUE(none["fast_p"]["compile"]["1"].is_null());
}

TEST(suite, table) {
  auto rows = mixed();
  rows[0].evaluation_id = 7;
  rows.push_back(row("g_torch", "passed", 3.0, 1.6, true));
  const auto t = report::suite_table(rows);
  for (auto what : {"problem", "status", "candidate ms", "reference ms", "compile ms", "vs reference", "vs compile",
                    "a_fast", "2.00x", "1.000", "2.000", "#7", "g_torch*", "1.60x", "eager PyTorch",
                    "fast_p vs reference  n=7", "fast_p vs compile    n=1", "p=0.5", "0.57 (4)",
                    "d_fails: impossible_time: it broke", "e_skipped: skipped: it broke"})
    EXPECT_TRUE(has(t, what)) << what << "\n" << t;
  // Fixed width: every row's status and speedup start where their headers do.
  std::vector<std::string> lines;
  for (std::size_t at = 0, nl; (nl = t.find('\n', at)) != std::string::npos; at = nl + 1) lines.push_back(t.substr(at, nl - at));
  ASSERT_GT(lines.size(), rows.size());
  const auto status_at = lines[0].find("status");
  for (std::size_t i = 0; i < rows.size(); ++i)
    EXPECT_EQ(lines[i + 1].compare(status_at, rows[i].status.size(), rows[i].status), 0) << t;
  EXPECT_EQ(lines[1].find("2.00x") + 5, lines[0].find("vs reference") + 12) << t;
  EXPECT_TRUE(has(report::suite_table(mixed()), "no problem has a torch.compile time"));
}

// `kforge suite` end to end: a seed, a candidate from --candidates, a problem with neither,
// a broken problem, and a folder that is no problem.
TEST(suite, command_end_to_end) {
  test::temp_dir d;
  test::cache_env cache;
  const auto gelu = test::problems_dir() / "gelu";
  auto copy_problem = [&](const std::string& name, bool seed) {
    std::filesystem::create_directories(d / "set" / name);
    // One trial per case and a short timing budget keep the test quick.
    test::write(d / "set" / name / "problem.toml",
                read_file(gelu / "problem.toml") + "\n[eval]\ntrials_per_case = 1\ntime_budget_s = 0.2\n");
    test::write(d / "set" / name / "reference.cpp", read_file(gelu / "reference.cpp"));
    if (seed) test::write(d / "set" / name / "seed.cpp", read_file(gelu / "seed.cpp"));
  };
  copy_problem("a_seeded", true);
  copy_problem("c_candidate", false);
  copy_problem("d_nothing", false);
  std::filesystem::create_directories(d / "set" / "b_broken");
  test::write(d / "set" / "b_broken" / "problem.toml", "name = \"broken\"\nbackend = \n");
  std::filesystem::create_directories(d / "set" / "notes");
  test::write(d / "set" / "notes" / "README.md", "not a problem\n");
  std::filesystem::create_directories(d / "cands");
  test::write(d / "cands" / "c_candidate.cpp", read_file(gelu / "seed.cpp"));
  test::write(d / "cands" / "d_nothing.cu", "// a CUDA file is not a CPU problem's candidate\n");

  const auto db = (d / "k.db").string();
  auto kf = [&](std::vector<std::string> args) {
    args.insert(args.begin(), {test::kforge_binary().string(), "--db", db});
    return run_command(args, 300);
  };
  auto r = kf({"suite", (d / "set").string(), "--candidates", (d / "cands").string(), "--json", "--seed", "5"});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const auto start = r.output.find('{');
  ASSERT_NE(start, std::string::npos) << r.output;
  const auto j = json::parse(r.output.substr(start));
  EXPECT_EQ(j["schema"], "kforge.suite/1");
  ASSERT_EQ(j["rows"].size(), 4u) << j.dump(2);
  EXPECT_EQ(j["rows"][0]["problem"], "a_seeded");
  EXPECT_EQ(j["rows"][0]["status"], "passed") << j.dump(2);
  EXPECT_TRUE(j["rows"][0]["candidate_s"].is_number());
  EXPECT_TRUE(j["rows"][0]["evaluation_id"].is_number());
  EXPECT_EQ(j["rows"][1]["problem"], "b_broken");
  EXPECT_EQ(j["rows"][1]["status"], "error");
  EXPECT_TRUE(has(j["rows"][1]["message"].get<std::string>(), "problem.toml")) << j["rows"][1];
  EXPECT_EQ(j["rows"][2]["status"], "passed") << j.dump(2);
  EXPECT_TRUE(has(j["rows"][2]["candidate"].get<std::string>(), "c_candidate.cpp")) << j["rows"][2];
  EXPECT_EQ(j["rows"][3]["status"], "skipped");
  EXPECT_TRUE(has(j["rows"][3]["message"].get<std::string>(), "--candidates")) << j["rows"][3];
  EXPECT_EQ(j["fast_p"]["reference"]["n"], 4);
  EXPECT_EQ(j["fast_p"]["reference"]["counts"]["0"], 2);

  auto text = kf({"suite", (d / "set").string()});
  ASSERT_EQ(text.exit_code, 0) << text.output;
  EXPECT_TRUE(has(text.output, "fast_p vs reference")) << text.output;
  EXPECT_TRUE(has(text.output, "c_candidate")) << text.output;

  EXPECT_EQ(kf({"suite", (d / "missing").string()}).exit_code, 2);
  EXPECT_EQ(kf({"suite", (d / "cands").string()}).exit_code, 2); // no problem under it
  EXPECT_EQ(kf({"suite", (d / "set").string(), "--budget", "3"}).exit_code, 2); // --budget needs --optimize
}
