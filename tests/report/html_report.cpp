// The HTML report: its document over a replayed branch search (run, problem and suite
// reports), the page's inlining, the diff it shows, and the page rendered in headless
// Chromium — no console error, and the charts hold the points the record says they should.
// Screenshots of each kind land in <build>/tests/test-artifacts/.
// To add a check of a section: count what the document says, and compare it with what
// html/report.js reports drawing in its kforge-rendered element.
#include "core/error.hpp"
#include "report/html_report.hpp"

#include "core/fs.hpp"
#include "core/subprocess.hpp"
#include "device/calibration.hpp"
#include "llm/config.hpp"
#include "problem/problem.hpp"
#include "report/suite.hpp"
#include "search/llm_gateway.hpp"
#include "search/strategy.hpp"
#include "test_util.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <functional>
#include <map>
#include <set>

using namespace kforge;
using nlohmann::json;
namespace fs = std::filesystem;

namespace {

/// The replayed branch search of tests/search (gelu, 2 rounds), run once for every test here.
class html_report_test : public ::testing::Test {
protected:
  static void SetUpTestSuite() {
    ::setenv("KFORGE_WORKER", KFORGE_WORKER_BINARY, 1);
    dir = new test::temp_dir;
    db = new store::store(*dir / "k.db");
    const auto gelu = problem::load(test::problems_dir() / "gelu");
    llm::llm_config cfg;
    cfg.models.push_back({.spec = "replay:" + (fs::path(KFORGE_TEST_DIR) / "search/data/gelu_branch.llm.jsonl").string()});
    auto gw = search::make_llm_gateway(*db, cfg, {}, 7);
    search::search_options o;
    o.strategy = "branch";
    o.seed = 42;
    o.trials = 1;
    o.time_budget_s = 0.2;
    o.build_jobs = 2;
    o.ideas = 2;
    o.implementations = 2;
    o.keep = 1;
    o.max_rounds = 2;
    o.patience = 0;
    o.tune_budget = 4;
    search::session s(*db, gelu, o, [](const json&) {}, gw);
    auto st = search::make_strategy("branch");
    search::run_search(s, *st);
    run_id = s.run_id();
  }
  static void TearDownTestSuite() {
    delete db;
    delete dir;
  }
  static inline test::temp_dir* dir = nullptr;
  static inline store::store* db = nullptr;
  static inline int64_t run_id = 0;
};

/// Headless Chromium, or empty: $KFORGE_CHROMIUM, chromium-headless-shell, chromium.
std::string chromium() {
  if (const char* v = std::getenv("KFORGE_CHROMIUM"); v && *v) return v;
  for (const char* name : {"chromium-headless-shell", "chromium"})
    if (auto p = find_on_path(name); !p.empty()) return p.string();
  return {};
}

/// What the page reported drawing (its kforge-rendered element), after loading `page` in
/// Chromium; a screenshot beside the test's artefacts when `shot` is given.
json render_in_browser(const std::string& browser, const fs::path& page, const std::string& shot = "") {
  const std::string flags = "--no-sandbox --headless --disable-gpu --window-size=1280,3600 --hide-scrollbars";
  auto r = run_command({"sh", "-c", "exec \"$0\" " + flags + " --dump-dom \"file://$1\" 2>/dev/null", browser,
                        page.string()},
                       120, std::size_t{64} << 20); // the DOM holds the inlined libraries: well over 1 MiB
  EXPECT_EQ(r.exit_code, 0) << r.output.substr(0, 2000);
  const std::string open = "id=\"kforge-rendered\">";
  const auto at = r.output.find(open);
  if (at == std::string::npos) {
    // The page is kept beside the artefacts so that the failure can be opened in a browser.
    const auto out = fs::current_path() / "test-artifacts";
    fs::create_directories(out);
    fs::copy_file(page, out / (page.stem().string() + ".failed.html"), fs::copy_options::overwrite_existing);
    ADD_FAILURE() << "the page wrote no kforge-rendered element (kept as " << (out / page.stem()).string()
                  << ".failed.html); DOM starts:\n" << r.output.substr(0, 3000);
    return json::object();
  }
  const auto end = r.output.find("</script>", at);
  auto rendered = json::parse(r.output.substr(at + open.size(), end - at - open.size()), nullptr, false);
  EXPECT_FALSE(rendered.is_discarded());
  if (!shot.empty()) {
    const auto out = fs::current_path() / "test-artifacts";
    fs::create_directories(out);
    auto s = run_command({"sh", "-c", "exec \"$0\" " + flags + " --screenshot=\"$2\" \"file://$1\" 2>/dev/null", browser,
                          page.string(), (out / shot).string()},
                         120);
    EXPECT_TRUE(fs::exists(out / shot)) << s.output.substr(0, 2000);
  }
  return rendered;
}

int count_if(const json& arr, const std::function<bool(const json&)>& f) {
  int n = 0;
  for (auto& e : arr) n += f(e);
  return n;
}

/// The page drew what the document holds, and nothing went wrong in the browser.
void expect_drawn(const json& doc, const json& rendered) {
  EXPECT_EQ(rendered.value("ok", false), true) << rendered.dump(2);
  EXPECT_EQ(rendered.value("errors", json::array()), json::array()) << "console errors in the page";
  const json& c = rendered["charts"];
  const json& evs = doc["evaluations"];
  const int timed = count_if(evs, [](auto& e) { return e["median_s"].is_number(); });
  EXPECT_EQ(c["progress"]["points"], timed);
  EXPECT_EQ(c["progress"]["failed_points"], static_cast<int>(evs.size()) - timed);
  EXPECT_EQ(c["lineage"]["nodes"], doc["candidates"].size());
  EXPECT_EQ(c["failures"]["bars"], doc["failures"].size());
  EXPECT_EQ(c["llm"]["rows"], doc["llm"]["by_model"].size());
  if (doc["best"].is_object()) {
    EXPECT_TRUE(rendered["highlighted"]["source"].get<bool>());
    EXPECT_EQ(rendered["highlighted"]["diff"].get<bool>(), doc["best"]["diff"].is_string());
  }
}

/// Ceilings for the development machine's CPU, in a cache of the test's own (the report
/// reads them; the search ran without, so no verdict depended on them).
struct planted_ceilings {
  test::cache_env cache;
  explicit planted_ceilings(const std::string& device) {
    const auto p = device::calibration_path(device);
    fs::create_directories(p.parent_path());
    test::write(p, json{{"device", device}, {"measured_at", "2026-12-03T00:00:00Z"}, {"copy_bytes_per_s", 2.0e10},
                        {"fp32_flops", 5.0e11}, {"tf32_flops", 0.0}, {"bf16_flops", 0.0}, {"fp64_flops", 2.5e11}}
                       .dump());
  }
};

} // namespace

TEST(html_report, unified_diff_shows_changed_lines_with_context) {
  EXPECT_EQ(report::unified_diff("a\nb\n", "a\nb\n", "x", "y"), "");
  const auto d = report::unified_diff("1\n2\n3\n4\n5\n6\n7\n8\n9\n", "1\n2\n3\n4\nfive\n6\n7\n8\n9\n", "old", "new");
  EXPECT_EQ(d, "--- old\n+++ new\n@@ -2,7 +2,7 @@\n 2\n 3\n 4\n-5\n+five\n 6\n 7\n 8\n");
  EXPECT_EQ(report::unified_diff("", "x\n", "a", "b"), "--- a\n+++ b\n@@ -0,0 +1,1 @@\n+x\n");
  EXPECT_EQ(report::unified_diff("x\ny\n", "x\n", "a", "b"), "--- a\n+++ b\n@@ -1,2 +1,1 @@\n x\n-y\n");
  // Two changes far apart are two hunks.
  std::string a, b;
  for (int i = 0; i < 30; ++i) {
    a += std::to_string(i) + "\n";
    b += (i == 2 || i == 25 ? "changed" : std::to_string(i)) + "\n";
  }
  const auto two = report::unified_diff(a, b, "a", "b");
  EXPECT_EQ(std::count(two.begin(), two.end(), '@'), 8) << two;
}

TEST(html_report, a_hostile_source_cannot_break_out_of_the_page_data) {
  json doc{{"schema", "kforge.report/1"},
           {"kind", "run"},
           {"title", "t"},
           {"best", {{"source", "</script><script>alert(1)</script><!-- kforge:app --><!--<script>"}}}};
  const auto page = report::render_html(doc);
  const std::string open = "<script type=\"application/json\" id=\"kforge-data\">";
  const auto at = page.find(open);
  ASSERT_NE(at, std::string::npos);
  const auto end = page.find("</script>", at);
  EXPECT_EQ(json::parse(page.substr(at + open.size(), end - at - open.size())), doc);
  EXPECT_EQ(page.find("<!-- kforge:"), std::string::npos) << "every placeholder was filled, and only once";
  EXPECT_EQ(page.find("http://"), page.find("http://www.w3.org")) << "no network reference but SVG's namespace";
}

TEST_F(html_report_test, a_run_report_holds_every_evaluation_and_renders_in_a_browser) {
  const auto run = db->get_run(run_id);
  ASSERT_TRUE(run && run->best_candidate_id);
  const auto evs = db->run_evaluations(run_id);
  std::string device;
  {
    auto ev = db->get_evaluation(evs.front().evaluation_id);
    device = json::parse(ev->summary_json).value("device", "");
  }
  planted_ceilings ceilings(device);
  const auto doc = report::report_of_run(*db, run_id);
  EXPECT_EQ(doc["schema"], "kforge.report/1");
  EXPECT_EQ(doc["kind"], "run");
  ASSERT_EQ(doc["evaluations"].size(), evs.size());
  for (std::size_t i = 0; i < evs.size(); ++i) {
    EXPECT_EQ(doc["evaluations"][i]["evaluation_id"], evs[i].evaluation_id);
    EXPECT_EQ(doc["evaluations"][i]["status"], evs[i].status);
    EXPECT_TRUE(doc["evaluations"][i]["t_s"].is_number());
  }
  // Tokens grow with the run; the last evaluation comes after every LLM call.
  const auto totals = db->llm_totals_of(run_id);
  EXPECT_EQ(doc["evaluations"].back()["tokens"], totals.input_tokens + totals.output_tokens);
  EXPECT_EQ(doc["llm"]["calls"], totals.calls);
  EXPECT_EQ(doc["best"]["candidate_id"], *run->best_candidate_id);
  EXPECT_NE(doc["best"]["source"].get<std::string>().find("std::tanh(inner)"), std::string::npos);
  EXPECT_TRUE(doc["best"]["diff"].is_string()) << "the best was written from a parent";
  EXPECT_TRUE(doc["machine"]["ceilings"].is_object());
  EXPECT_GT(doc["problem"]["flops"].get<double>(), 0);
  EXPECT_EQ(doc["reproduce"]["seed"], "42");
  // Failures: the cheap tanh fails the oracle, one answer had no code, one build failed.
  std::map<std::string, int> failures;
  for (auto& f : doc["failures"]) failures[f["check"]] = f["count"];
  EXPECT_GE(failures["tolerance"], 1);
  EXPECT_EQ(failures["answer: malformed"], 1);
  EXPECT_GE(failures["build_failed"], 1);
  // Every evaluated candidate is a node, with its ancestors.
  std::set<int64_t> nodes;
  for (auto& c : doc["candidates"]) nodes.insert(c["candidate_id"].get<int64_t>());
  for (auto& e : evs) EXPECT_TRUE(nodes.count(e.candidate_id));

  const std::string browser = chromium();
  if (browser.empty()) GTEST_SKIP() << "no headless Chromium (scripts/test.sh installs chromium-headless-shell)";
  test::temp_dir out;
  write_file_atomic(out / "run.html", report::render_html(doc));
  const auto rendered = render_in_browser(browser, out / "run.html", "report-run.png");
  expect_drawn(doc, rendered);
  const int roofline_points = count_if(doc["evaluations"], [](auto& e) { return e["status"] == "passed" && e["median_s"].is_number(); });
  EXPECT_EQ(rendered["charts"]["roofline"]["points"], roofline_points);
  EXPECT_EQ(rendered["charts"]["roofline"]["ceilings"], 2);
}

TEST_F(html_report_test, a_problem_report_covers_every_evaluation_of_the_problem) {
  const auto doc = report::report_of_problem(*db, "gelu");
  EXPECT_EQ(doc["kind"], "problem");
  EXPECT_EQ(doc["evaluations"].size(), db->experiment_log("gelu", 0).size());
  EXPECT_TRUE(doc["best"].is_object());
  EXPECT_TRUE(doc["machine"]["ceilings"].is_null()) << "no calibration in this cache";
  EXPECT_THROW((void)report::report_of_problem(*db, "no_such_problem"), kforge::error);

  const std::string browser = chromium();
  if (browser.empty()) GTEST_SKIP() << "no headless Chromium (scripts/test.sh installs chromium-headless-shell)";
  test::temp_dir out;
  write_file_atomic(out / "problem.html", report::render_html(doc));
  const auto rendered = render_in_browser(browser, out / "problem.html", "report-problem.png");
  expect_drawn(doc, rendered);
  EXPECT_EQ(rendered["charts"]["roofline"]["ceilings"], 0) << "not calibrated: points only";
}

TEST_F(html_report_test, a_suite_report_has_a_row_per_problem_and_fast_p) {
  // Rows as kforge suite makes them, over this record's evaluations.
  std::vector<report::suite_row> rows;
  for (auto& e : db->run_evaluations(run_id)) {
    if (rows.size() == 3) break;
    auto ev = db->get_evaluation(e.evaluation_id);
    auto r = report::row_of_evaluation(rows.empty() ? "gelu" : rows.size() == 1 ? "softmax" : "layernorm",
                                       json::parse(ev->summary_json));
    r.evaluation_id = e.evaluation_id;
    rows.push_back(r);
  }
  rows.push_back({.problem = "missing", .status = "skipped", .message = "no candidate"});
  auto suite = report::suite_json(rows);
  suite["dir"] = test::problems_dir().string();
  const auto doc = report::report_of_suite(db, suite);
  EXPECT_EQ(doc["kind"], "suite");
  ASSERT_EQ(doc["suite"]["rows"].size(), 4u);
  EXPECT_GT(doc["suite"]["rows"][0]["flops"].get<double>(), 0) << "work counts from the suite's problem folders";
  EXPECT_TRUE(doc["suite"]["fast_p"]["reference"].contains("1"));
  EXPECT_EQ(doc["statuses"]["skipped"], 1) << "the failures chart counts problems per verdict";
  EXPECT_THROW((void)report::report_of_suite(db, json{{"schema", "kforge.eval/1"}}), kforge::error);

  const std::string browser = chromium();
  if (browser.empty()) GTEST_SKIP() << "no headless Chromium (scripts/test.sh installs chromium-headless-shell)";
  test::temp_dir out;
  write_file_atomic(out / "suite.html", report::render_html(doc));
  const auto rendered = render_in_browser(browser, out / "suite.html", "report-suite.png");
  EXPECT_EQ(rendered.value("ok", false), true) << rendered.dump(2);
  EXPECT_EQ(rendered.value("errors", json::array()), json::array());
  EXPECT_EQ(rendered["charts"]["suite"]["rows"], 4);
}
