// The run report and the export, over a small record written with the store API: a seed,
// two generations below it, a failed sibling, ideas, an LLM call and proposals.
#include "report/run_report.hpp"

#include "core/error.hpp"
#include "core/fs.hpp"
#include "core/subprocess.hpp"
#include "store/store.hpp"
#include "test_util.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

using namespace kforge;
using nlohmann::json;

namespace {

json summary(double median, double reference, const std::string& device = "cuda:0: NVIDIA H200") {
  json t{{"candidate", {{"subject", "candidate"}, {"median_s", median}}},
         {"reference", {{"subject", "reference"}, {"median_s", reference}}},
         {"cublas", {{"subject", "cublas"}, {"median_s", median * 1.5}}},
         {"speedup", reference / median},
         {"speedup_over", {{"reference", reference / median}, {"cublas", 1.5}}},
         {"roofline", {{"floor_s", median * 0.6}, {"bound", "memory"}, {"candidate_fraction", 0.6}}}};
  return {{"schema", "kforge.eval/1"},
          {"problem", "softmax"},
          {"status", "passed"},
          {"passed", true},
          {"device", device},
          {"precision", "nominal"},
          {"builds",
           {{{"role", "candidate"},
             {"toolchain", device.starts_with("cpu") ? "host" : "nvcc"},
             {"command", "nvcc -O3 -DKF_REAL=float k.cu -o k.so"}}}},
          {"timing", t}};
}

store::timing_record timing(const std::string& subject, double median) {
  store::timing_record t;
  t.subject = subject;
  t.samples = 20;
  t.median_s = t.mean_s = t.min_s = t.max_s = t.p10_s = t.p90_s = median;
  return t;
}

/// One evaluation of `cid`, finished with `status` (timed when it passed).
int64_t evaluate(store::store& db, int64_t cid, const std::string& status, double median = 0, double reference = 0,
                 const std::string& device = "cuda:0: NVIDIA H200") {
  auto eid = db.begin_evaluation(cid, std::nullopt, "{}");
  if (status == "passed") {
    db.put_timing(eid, timing("candidate", median));
    db.put_timing(eid, timing("reference", reference));
    db.put_timing(eid, timing("cublas", median * 1.5));
    auto s = summary(median, reference, device);
    s["evaluation_id"] = eid;
    db.finish_evaluation(eid, status, "passed", s.dump(), 0, device);
  } else {
    db.finish_evaluation(eid, status, status + ": it broke", json{{"schema", "kforge.eval/1"}, {"status", status}}.dump());
  }
  return eid;
}

struct fixture {
  test::temp_dir dir;
  std::unique_ptr<store::store> db;
  int64_t run = 0, seed = 0, child = 0, grandchild = 0, broken = 0;
  int64_t seed_eval = 0, child_eval = 0, best_eval = 0, broken_eval = 0;
  int64_t idea_good = 0, idea_bad = 0, idea_untried = 0, idea_malformed = 0;

  explicit fixture(const std::string& device = "cuda:0: NVIDIA H200", const std::string& best_source = "") {
    db = std::make_unique<store::store>(dir / "k.db");
    auto pid = db->put_problem({"softmax", "/problems/softmax", "h1", "name = \"softmax\"\n"});
    seed = db->put_candidate(pid, "// seed\n__global__ void k() {}\n", "seed", "seed.cu");
    child = db->put_candidate(pid, "// r1\n__global__ void k() {}\n", "llm", "r1-implement", seed);
    grandchild = db->put_candidate(
        pid, best_source.empty() ? std::string("// r2 tuned\n#define BLOCK 256\n__global__ void k() {}\n") : best_source,
        "tuner", "r2-tune", child);
    broken = db->put_candidate(pid, "// broken\n", "llm", "r1-other", seed);

    run = db->begin_run(pid, "branch", R"({"strategy":"branch","budget":{"evaluations":40}})");
    auto call = db->put_llm_call({.run_id = run, .role = "ideas", .provider = "anthropic", .model = "m",
                                  .input_tokens = 1200, .output_tokens = 300, .cached_input_tokens = 100,
                                  .cost_usd = 0.25, .started_at = "2026-01-01T00:00:00.000Z"});
    db->put_llm_call({.run_id = run, .role = "code", .provider = "anthropic", .model = "m", .input_tokens = 800,
                      .output_tokens = 0, .error_kind = "http", .error_message = "503",
                      .started_at = "2026-01-01T00:00:01.000Z"});
    idea_good = db->put_idea({.run_id = run, .round = 1, .title = "vectorize loads", .body = "float4", .llm_call_id = call});
    idea_bad = db->put_idea({.run_id = run, .round = 1, .title = "use tensor cores", .body = "wmma", .llm_call_id = call});
    idea_untried = db->put_idea({.run_id = run, .round = 2, .title = "persistent kernel", .body = "...", .llm_call_id = call});
    idea_malformed = db->put_idea({.run_id = run, .round = 2, .title = "warp shuffles", .body = "...", .llm_call_id = call});

    seed_eval = evaluate(*db, seed, "passed", 2e-3, 4e-3, device);
    db->put_run_evaluation({.run_id = run, .evaluation_id = seed_eval, .candidate_id = seed, .round = 0, .step = "seed"});
    db->set_run_best(run, seed, seed_eval);
    child_eval = evaluate(*db, child, "passed", 1e-3, 4e-3, device);
    db->put_run_evaluation({.run_id = run, .evaluation_id = child_eval, .candidate_id = child, .round = 1,
                            .step = "implement", .idea_id = idea_good});
    db->set_run_best(run, child, child_eval);
    broken_eval = evaluate(*db, broken, "build_failed");
    db->put_run_evaluation({.run_id = run, .evaluation_id = broken_eval, .candidate_id = broken, .round = 1,
                            .step = "implement", .idea_id = idea_bad});
    best_eval = evaluate(*db, grandchild, "passed", 5e-4, 4e-3, device);
    db->put_run_evaluation({.run_id = run, .evaluation_id = best_eval, .candidate_id = grandchild, .round = 2,
                            .step = "tune", .idea_id = idea_good, .params_json = R"({"BLOCK":256})"});
    db->set_run_best(run, grandchild, best_eval);
    // The same source again: the earlier result, reused.
    db->put_run_evaluation({.run_id = run, .evaluation_id = child_eval, .candidate_id = child, .round = 2,
                            .step = "fix", .reused = true});

    db->put_proposal({.run_id = run, .round = 1, .step = "implement", .llm_call_id = call, .idea_id = idea_good,
                      .status = "ok", .candidate_id = child});
    db->put_proposal({.run_id = run, .round = 1, .step = "implement", .llm_call_id = call, .idea_id = idea_bad,
                      .status = "ok", .candidate_id = broken});
    db->put_proposal({.run_id = run, .round = 2, .step = "implement", .llm_call_id = call, .idea_id = idea_malformed,
                      .status = "malformed", .error = "no code block in the answer"});
    db->finish_run(run, "finished", "budget: 5 evaluations");
  }
};

bool has(const std::string& text, const std::string& what) { return text.find(what) != std::string::npos; }

} // namespace

TEST(run_report, run_json_has_the_best_lineage_ideas_and_totals) {
  fixture f;
  auto j = report::run_json(*f.db, f.run);
  EXPECT_EQ(j["schema"], "kforge.run/1");
  EXPECT_EQ(j["run"]["id"], f.run);
  EXPECT_EQ(j["run"]["problem"], "softmax");
  EXPECT_EQ(j["run"]["problem_path"], "/problems/softmax");
  EXPECT_EQ(j["run"]["strategy"], "branch");
  EXPECT_EQ(j["run"]["status"], "finished");
  EXPECT_EQ(j["run"]["stop_reason"], "budget: 5 evaluations");
  EXPECT_TRUE(j["run"]["finished_at"].is_string());
  EXPECT_EQ(j["run"]["config"]["budget"]["evaluations"], 40);

  const auto& b = j["best"];
  ASSERT_TRUE(b.is_object());
  EXPECT_EQ(b["candidate_id"], f.grandchild);
  EXPECT_EQ(b["evaluation_id"], f.best_eval);
  EXPECT_EQ(b["label"], "r2-tune");
  EXPECT_EQ(b["origin"], "tuner");
  EXPECT_DOUBLE_EQ(b["median_s"].get<double>(), 5e-4);
  EXPECT_DOUBLE_EQ(b["reference_median_s"].get<double>(), 4e-3);
  EXPECT_DOUBLE_EQ(b["speedup"].get<double>(), 8.0);
  EXPECT_DOUBLE_EQ(b["roofline_fraction"].get<double>(), 0.6);
  EXPECT_DOUBLE_EQ(b["speedup_over"]["cublas"].get<double>(), 1.5);
  EXPECT_EQ(b["device"], "cuda:0: NVIDIA H200");
  EXPECT_EQ(b["round"], 2);
  EXPECT_EQ(b["step"], "tune");

  ASSERT_EQ(j["lineage"].size(), 3u); // best first, root last
  EXPECT_EQ(j["lineage"][0]["candidate_id"], f.grandchild);
  EXPECT_EQ(j["lineage"][1]["candidate_id"], f.child);
  EXPECT_EQ(j["lineage"][1]["label"], "r1-implement");
  EXPECT_EQ(j["lineage"][2]["candidate_id"], f.seed);
  EXPECT_EQ(j["lineage"][2]["origin"], "seed");
  EXPECT_DOUBLE_EQ(j["lineage"][2]["speedup"].get<double>(), 2.0);

  ASSERT_EQ(j["evaluations"].size(), 5u);
  const auto& e1 = j["evaluations"][1];
  EXPECT_EQ(e1["id"], f.child_eval);
  EXPECT_EQ(e1["candidate_id"], f.child);
  EXPECT_EQ(e1["parent_id"], f.seed);
  EXPECT_EQ(e1["round"], 1);
  EXPECT_EQ(e1["step"], "implement");
  EXPECT_EQ(e1["idea_id"], f.idea_good);
  EXPECT_DOUBLE_EQ(e1["speedup"].get<double>(), 4.0);
  EXPECT_EQ(j["evaluations"][2]["status"], "build_failed");
  EXPECT_TRUE(j["evaluations"][2]["median_s"].is_null());
  EXPECT_TRUE(j["evaluations"][2]["speedup"].is_null());
  EXPECT_EQ(j["evaluations"][3]["params"]["BLOCK"], 256);
  EXPECT_TRUE(j["evaluations"][4]["reused"].get<bool>());
  EXPECT_TRUE(j["evaluations"][0]["parent_id"].is_null());

  ASSERT_EQ(j["ideas"].size(), 4u);
  EXPECT_EQ(j["ideas"][0]["title"], "vectorize loads");
  EXPECT_EQ(j["ideas"][0]["outcome"], "passed");
  EXPECT_DOUBLE_EQ(j["ideas"][0]["speedup"].get<double>(), 8.0); // the best of its two evaluations
  EXPECT_EQ(j["ideas"][0]["evaluations"], 2);
  EXPECT_EQ(j["ideas"][1]["outcome"], "build_failed");
  EXPECT_TRUE(j["ideas"][1]["speedup"].is_null());
  EXPECT_EQ(j["ideas"][2]["outcome"], "not tried");
  EXPECT_EQ(j["ideas"][3]["outcome"], "malformed");

  EXPECT_EQ(j["proposals"]["total"], 3);
  EXPECT_EQ(j["proposals"]["counts"]["ok"], 2);
  EXPECT_EQ(j["proposals"]["counts"]["malformed"], 1);
  ASSERT_EQ(j["proposals"]["errors"].size(), 1u);
  EXPECT_EQ(j["proposals"]["errors"][0]["error"], "no code block in the answer");
  EXPECT_EQ(j["proposals"]["errors"][0]["idea_id"], f.idea_malformed);

  EXPECT_EQ(j["llm"]["calls"], 2);
  EXPECT_EQ(j["llm"]["failed_calls"], 1);
  EXPECT_EQ(j["llm"]["input_tokens"], 2000);
  EXPECT_EQ(j["llm"]["output_tokens"], 300);
  EXPECT_EQ(j["llm"]["cached_input_tokens"], 100);
  EXPECT_DOUBLE_EQ(j["llm"]["cost_usd"].get<double>(), 0.25);
}

TEST(run_report, run_text_names_the_key_facts) {
  fixture f;
  const auto text = report::run_text(report::run_json(*f.db, f.run));
  EXPECT_TRUE(has(text, "run " + std::to_string(f.run))) << text;
  EXPECT_TRUE(has(text, "softmax")) << text;
  EXPECT_TRUE(has(text, "branch")) << text;
  EXPECT_TRUE(has(text, "budget: 5 evaluations")) << text;
  EXPECT_TRUE(has(text, "5 evaluations (4 passed, 1 reused)")) << text;
  EXPECT_TRUE(has(text, "2 LLM calls (1 failed)")) << text;
  EXPECT_TRUE(has(text, "$0.25")) << text;
  EXPECT_TRUE(has(text, "best  candidate #" + std::to_string(f.grandchild) + " r2-tune")) << text;
  EXPECT_TRUE(has(text, "500.00 us")) << text;
  EXPECT_TRUE(has(text, "8.00x vs reference")) << text;
  EXPECT_TRUE(has(text, "1.50x vs cublas")) << text;
  EXPECT_TRUE(has(text, "60% of the roofline")) << text;
  // The lineage, root first and indented.
  const auto seed_at = text.find("  #" + std::to_string(f.seed) + " seed.cu");
  const auto child_at = text.find("    #" + std::to_string(f.child) + " r1-implement");
  const auto best_at = text.find("      #" + std::to_string(f.grandchild) + " r2-tune");
  ASSERT_NE(seed_at, std::string::npos) << text;
  ASSERT_NE(child_at, std::string::npos) << text;
  ASSERT_NE(best_at, std::string::npos) << text;
  EXPECT_LT(seed_at, child_at);
  EXPECT_LT(child_at, best_at);
  EXPECT_TRUE(has(text, "vectorize loads")) << text;
  EXPECT_TRUE(has(text, "not tried")) << text;
  EXPECT_TRUE(has(text, "no code block in the answer")) << text;
  EXPECT_TRUE(has(text, "build_failed")) << text;
  EXPECT_TRUE(has(text, "(reused)")) << text;
  EXPECT_TRUE(has(text, "*best")) << text;
}

TEST(run_report, a_run_without_a_best_and_a_missing_run) {
  test::temp_dir d;
  store::store db(d / "k.db");
  auto pid = db.put_problem({"gelu", "/p/gelu", "h", ""});
  auto run = db.begin_run(pid, "refine", "{}");
  auto j = report::run_json(db, run);
  EXPECT_TRUE(j["best"].is_null());
  EXPECT_TRUE(j["lineage"].empty());
  EXPECT_TRUE(j["run"]["finished_at"].is_null());
  EXPECT_EQ(j["llm"]["calls"], 0);
  EXPECT_TRUE(has(report::run_text(j), "no candidate passed"));
  try {
    (void)report::run_json(db, run + 5);
    FAIL() << "a missing run gave a document";
  } catch (const kforge::error& e) {
    EXPECT_EQ(e.kind(), kforge::error_kind::usage);
    EXPECT_EQ(std::string(e.what()), "no run " + std::to_string(run + 5));
  }
  try {
    (void)report::export_best(db, run, d / "out");
    FAIL() << "exported a run without a best";
  } catch (const kforge::error& e) {
    EXPECT_EQ(e.kind(), kforge::error_kind::usage);
    EXPECT_EQ(std::string(e.what()), "no candidate of run " + std::to_string(run) + " passed; nothing to export");
  }
  EXPECT_THROW((void)report::export_best(db, run + 5, d / "out"), kforge::error);
}

TEST(run_report, runs_list) {
  fixture f;
  auto pid = f.db->put_problem({"gelu", "/p/gelu", "h", ""});
  auto second = f.db->begin_run(pid, "tune", "{}");
  auto runs = f.db->list_runs();
  auto j = report::runs_json(runs, f.db.get());
  EXPECT_EQ(j["schema"], "kforge.show-runs/1");
  ASSERT_EQ(j["runs"].size(), 2u);
  EXPECT_EQ(j["runs"][0]["id"], second); // newest first
  EXPECT_EQ(j["runs"][0]["status"], "running");
  EXPECT_TRUE(j["runs"][0]["best_candidate_id"].is_null());
  EXPECT_EQ(j["runs"][1]["best_candidate_id"], f.grandchild);
  EXPECT_EQ(j["runs"][1]["evaluations"], 5);
  EXPECT_DOUBLE_EQ(j["runs"][1]["best_speedup"].get<double>(), 8.0);
  EXPECT_FALSE(report::runs_json(runs)["runs"][1].contains("evaluations"));
  auto text = report::runs_text(runs, f.db.get());
  EXPECT_TRUE(has(text, "gelu")) << text;
  EXPECT_TRUE(has(text, "8.00x")) << text;
  EXPECT_TRUE(has(text, "budget: 5 evaluations")) << text;
  EXPECT_TRUE(has(report::runs_text({}), "no runs"));
}

TEST(run_report, run_refs) {
  EXPECT_EQ(report::parse_run_ref("7"), 7);
  EXPECT_EQ(report::parse_run_ref("r7"), 7);
  EXPECT_EQ(report::parse_run_ref("run:12"), 12);
  EXPECT_EQ(report::parse_run_ref("run12"), 12);
  for (auto bad : {"", "r", "run:", "x7", "7x", "-3", "0", "r-1", "run: 7"})
    EXPECT_FALSE(report::parse_run_ref(bad)) << bad;
}

TEST(run_report, export_writes_a_standalone_cuda_tree) {
  fixture f;
  const auto out = f.dir / "export";
  auto r = report::export_best(*f.db, f.run, out);
  EXPECT_EQ(r.candidate_id, f.grandchild);
  EXPECT_EQ(r.evaluation_id, f.best_eval);
  EXPECT_TRUE(r.cuda);
  EXPECT_FALSE(r.kernel_only);
  ASSERT_EQ(r.files.size(), 4u);
  EXPECT_EQ(r.files[0], out / "softmax_best.cu");
  EXPECT_EQ(read_file(out / "softmax_best.cu"), f.db->get_candidate(f.grandchild)->source);
  EXPECT_EQ(read_file(out / "kforge" / "kernel.h"), read_file(test::source_dir() / "include" / "kforge" / "kernel.h"));
  const auto readme = read_file(out / "README.md");
  EXPECT_TRUE(has(readme, "candidate #" + std::to_string(f.grandchild))) << readme;
  EXPECT_TRUE(has(readme, "run " + std::to_string(f.run))) << readme;
  EXPECT_TRUE(has(readme, "nvcc -O3 -std=c++17 -arch=sm_90a -Xcompiler -fPIC -shared -I. softmax_best.cu -o "
                          "softmax_best.so"))
      << readme;
  EXPECT_TRUE(has(readme, "500.00 us")) << readme;
  EXPECT_TRUE(has(readme, "8.00x")) << readme;
  EXPECT_TRUE(has(readme, "60%")) << readme;
  EXPECT_TRUE(has(readme, "NVIDIA H200")) << readme;
  EXPECT_TRUE(has(readme, R"({"BLOCK":256})")) << readme;
  auto doc = json::parse(read_file(out / "softmax_best.json"));
  EXPECT_EQ(doc["schema"], "kforge.eval/1");
  EXPECT_EQ(doc["evaluation_id"], f.best_eval);
  // Exporting again replaces the files.
  EXPECT_EQ(report::export_best(*f.db, f.run, out).files.size(), 4u);
}

TEST(run_report, export_of_a_kernel_only_candidate_says_how_it_is_launched) {
  const std::string src = "// kforge: launch k<256><<<cdiv(x.numel, 256), 256>>>(x, y, x.numel)\n"
                          "template <int B> __global__ void k(const float* x, float* y, long long n) {}\n";
  fixture f("cuda:0: NVIDIA H200", src);
  auto r = report::export_best(*f.db, f.run, f.dir / "ko");
  EXPECT_TRUE(r.kernel_only);
  EXPECT_TRUE(std::filesystem::exists(f.dir / "ko" / "kforge" / "nvrtc_prelude.h"));
  const auto readme = read_file(f.dir / "ko" / "README.md");
  EXPECT_TRUE(has(readme, "kernel-only")) << readme;
  EXPECT_TRUE(has(readme, "// kforge: launch k<256><<<cdiv(x.numel, 256), 256>>>(x, y, x.numel)")) << readme;
  EXPECT_TRUE(has(readme, "grid and block")) << readme;
}

TEST(run_report, export_of_a_cpu_candidate_is_a_cpp_file) {
  fixture f("cpu: Intel(R) Xeon(R) Processor", "// cpu\n#include <kforge/kernel.h>\n");
  auto r = report::export_best(*f.db, f.run, f.dir / "cpu");
  EXPECT_FALSE(r.cuda);
  EXPECT_EQ(r.files[0], f.dir / "cpu" / "softmax_best.cpp");
  const auto readme = read_file(f.dir / "cpu" / "README.md");
  EXPECT_TRUE(has(readme, "c++ -O3 -std=c++17 -fPIC -shared -fopenmp -I. softmax_best.cpp -o softmax_best.so"))
      << readme;
}

// The commands end to end through the binary, on the same record.
TEST(run_report, show_and_export_commands) {
  fixture f;
  const auto db = (f.dir / "k.db").string();
  auto kf = [&](std::vector<std::string> args) {
    args.insert(args.begin(), {test::kforge_binary().string(), "--db", db});
    return run_command(args, 60);
  };
  auto runs = kf({"show", "runs", "--json"});
  ASSERT_EQ(runs.exit_code, 0) << runs.output;
  EXPECT_EQ(json::parse(runs.output)["schema"], "kforge.show-runs/1");
  for (auto ref : {std::vector<std::string>{"run", std::to_string(f.run)}, {"r" + std::to_string(f.run)},
                   {"run:" + std::to_string(f.run)}}) {
    ref.insert(ref.begin(), "show");
    ref.push_back("--json");
    auto r = kf(ref);
    ASSERT_EQ(r.exit_code, 0) << r.output;
    auto j = json::parse(r.output);
    EXPECT_EQ(j["schema"], "kforge.run/1");
    EXPECT_EQ(j["best"]["candidate_id"], f.grandchild);
  }
  auto text = kf({"show", "run", std::to_string(f.run)});
  ASSERT_EQ(text.exit_code, 0) << text.output;
  EXPECT_TRUE(has(text.output, "lineage")) << text.output;
  auto ev = kf({"show", std::to_string(f.best_eval), "--json"});
  ASSERT_EQ(ev.exit_code, 0) << ev.output;
  EXPECT_EQ(json::parse(ev.output)["schema"], "kforge.eval/1");
  auto bad = kf({"show", "bogus"});
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_TRUE(has(bad.output, "r7 or run:7")) << bad.output;
  EXPECT_EQ(kf({"show", "run", "999"}).exit_code, 2);

  const auto out = (f.dir / "exp").string();
  auto x = kf({"export", "r" + std::to_string(f.run), "--out", out, "--json"});
  ASSERT_EQ(x.exit_code, 0) << x.output;
  auto j = json::parse(x.output);
  EXPECT_EQ(j["schema"], "kforge.export/1");
  EXPECT_EQ(j["run"], f.run);
  EXPECT_EQ(j["candidate_id"], f.grandchild);
  EXPECT_EQ(j["files"].size(), 4u);
  EXPECT_TRUE(std::filesystem::exists(f.dir / "exp" / "softmax_best.cu"));
  auto none = kf({"export", "999"});
  EXPECT_EQ(none.exit_code, 2);
  EXPECT_TRUE(has(none.output, "no run 999")) << none.output;
}
