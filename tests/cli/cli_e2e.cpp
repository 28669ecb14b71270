// End to end through the kforge binary: problem in, verdict out, everything in SQLite.
#include "core/fs.hpp"
#include "core/subprocess.hpp"
#include "store/store.hpp"
#include "test_util.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <map>
#include <thread>

using namespace kforge;

namespace {

struct cli_result {
  int code;
  std::string out;
};

cli_result kforge_run(const std::vector<std::string>& args) {
  std::vector<std::string> argv = {test::kforge_binary().string()};
  argv.insert(argv.end(), args.begin(), args.end());
  auto r = run_command(argv, 300);
  return {r.signaled ? 128 + r.signal : r.exit_code, r.output};
}

nlohmann::json json_of(const std::string& out) {
  auto start = out.find('{');
  auto j = nlohmann::json::parse(start == std::string::npos ? "" : out.substr(start), nullptr, false);
  EXPECT_FALSE(j.is_discarded()) << out;
  return j;
}

std::string problem(const std::string& name) { return (test::problems_dir() / name).string(); }

} // namespace

TEST(cli, help_on_every_command) {
  for (auto cmd : {"check", "eval", "show", "optimize", "profile", "export", "log", "calibrate", "suite", "import"}) {
    auto r = kforge_run({cmd, "--help"});
    EXPECT_EQ(r.code, 0) << cmd;
    EXPECT_NE(r.out.find("--json"), std::string::npos) << cmd;
  }
  EXPECT_EQ(kforge_run({"--help"}).code, 0);
  EXPECT_EQ(kforge_run({}).code, 2);
}

TEST(cli, eval_seed_passes_is_timed_and_recorded) {
  test::temp_dir d;
  const auto db = (d / "k.db").string();
  auto r = kforge_run({"--db", db, "eval", problem("gelu"), problem("gelu") + "/seed.cpp", "--json", "--time-budget",
                       "0.3", "--trials", "1"});
  ASSERT_EQ(r.code, 0) << r.out;
  auto j = json_of(r.out);
  EXPECT_EQ(j["schema"], "kforge.eval/1");
  EXPECT_EQ(j["status"], "passed");
  EXPECT_EQ(j["checks_failed"], 0);
  ASSERT_TRUE(j["timing"].is_object());
  EXPECT_GT(j["timing"]["candidate"]["median_s"].get<double>(), 0);
  EXPECT_GT(j["timing"]["reference"]["median_s"].get<double>(), 0);
  EXPECT_GT(j["timing"]["speedup"].get<double>(), 0);
  EXPECT_EQ(j["builds"].size(), 3u);
  for (auto& b : j["builds"]) { // each artifact's sha256, as built or as checked in the cache
    ASSERT_TRUE(b["sha256"].is_string()) << b.dump();
    EXPECT_EQ(b["sha256"].get<std::string>().size(), 64u);
  }

  store::store s(db);
  auto ev = s.get_evaluation(j["evaluation_id"].get<int64_t>());
  ASSERT_TRUE(ev.has_value());
  EXPECT_EQ(ev->status, "passed");
  EXPECT_FALSE(ev->finished_at.empty());
  EXPECT_GT(ev->checks.size(), 10u);
  EXPECT_EQ(ev->timings.size(), 2u);
  EXPECT_EQ(nlohmann::json::parse(ev->config_json)["precision"], "nominal");
  EXPECT_EQ(j["precision"], "nominal");
  EXPECT_TRUE(j["review"].empty());
  bool timed_calls_rechecked = false, hidden_trial = false;
  for (auto& c : j["checks"]) timed_calls_rechecked |= c["name"] == "timed_output" && c["passed"] == true;
  for (auto& t : j["trials"]) hidden_trial |= t["case"] == "hidden:mixed";
  EXPECT_TRUE(timed_calls_rechecked);
  EXPECT_TRUE(hidden_trial);
  auto cand = s.get_candidate(ev->candidate_id);
  ASSERT_TRUE(cand.has_value());
  EXPECT_EQ(cand->origin, "file");
  EXPECT_NE(cand->source.find("kf_forward"), std::string::npos);
  EXPECT_EQ(s.builds_of(ev->candidate_id).size(), 3u);

  auto human = kforge_run({"--db", db, "show"});
  EXPECT_EQ(human.code, 0);
  EXPECT_NE(human.out.find("gelu"), std::string::npos);
  EXPECT_NE(human.out.find("passed"), std::string::npos);
  auto one = kforge_run({"--db", db, "show", std::to_string(ev->id), "--json"});
  EXPECT_EQ(json_of(one.out)["status"], "passed");
}

TEST(cli, human_output_names_the_failure) {
  test::temp_dir d;
  test::write(d / "zeros.cpp", R"(#include <kforge/kernel.h>
KF_EXPORT int kf_forward(const kf_args* a) {
  float* y = (float*)a->outputs[0].data;
  for (long i = 0; i < a->outputs[0].shape[0] * a->outputs[0].shape[1]; ++i) y[i] = 0.0f;
  return 0;
})");
  auto r = kforge_run({"--db", (d / "k.db").string(), "eval", problem("softmax"), (d / "zeros.cpp").string(),
                       "--trials", "1"});
  EXPECT_EQ(r.code, 1) << r.out;
  EXPECT_NE(r.out.find("FAILED  tolerance"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("worst element y["), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("expected"), std::string::npos) << r.out;
}

TEST(cli, compile_error_is_build_failed_with_the_compiler_line) {
  test::temp_dir d;
  test::write(d / "bad.cpp", "#include <kforge/kernel.h>\nKF_EXPORT int kf_forward(const kf_args* a) { return nope; }\n");
  auto r = kforge_run({"--db", (d / "k.db").string(), "eval", problem("gelu"), (d / "bad.cpp").string(), "--json"});
  EXPECT_EQ(r.code, 1);
  auto j = json_of(r.out);
  EXPECT_EQ(j["status"], "build_failed");
  EXPECT_NE(j["message"].get<std::string>().find("nope"), std::string::npos);
}

TEST(cli, bad_inputs_are_clear_errors_with_exit_2) {
  test::temp_dir d;
  auto missing = kforge_run({"--db", (d / "k.db").string(), "eval", problem("gelu"), (d / "none.cpp").string()});
  EXPECT_EQ(missing.code, 2);
  EXPECT_NE(missing.out.find("none.cpp"), std::string::npos);

  std::filesystem::create_directories(d / "p");
  test::write(d / "p" / "problem.toml", "name = \"x\"\nbackend = \"cpu\"\n[[inputs]\nname = 3\n");
  auto bad = kforge_run({"--db", (d / "k.db").string(), "check", (d / "p").string()});
  EXPECT_EQ(bad.code, 2);
  EXPECT_NE(bad.out.find("problem.toml"), std::string::npos) << bad.out;

  auto nodir = kforge_run({"--db", (d / "k.db").string(), "check", (d / "nowhere").string()});
  EXPECT_EQ(nodir.code, 2);
  EXPECT_NE(nodir.out.find("nowhere"), std::string::npos);

  auto noshow = kforge_run({"--db", (d / "absent.db").string(), "show"});
  EXPECT_EQ(noshow.code, 2);
}

TEST(cli, check_passes_on_every_shipped_cpu_problem) {
  test::temp_dir d;
  for (auto name : {"gelu", "softmax", "layernorm"}) {
    auto r = kforge_run({"--db", (d / "k.db").string(), "check", problem(name), "--json"});
    EXPECT_EQ(r.code, 0) << name << ": " << r.out;
    auto j = json_of(r.out);
    EXPECT_EQ(j["schema"], "kforge.check/1");
    EXPECT_TRUE(j["ok"].get<bool>()) << name;
    EXPECT_EQ(j["reference"]["status"], "passed") << name;
    EXPECT_EQ(j["seed"]["status"], "passed") << name;
    ASSERT_EQ(j["controls"].size(), 5u) << name;
    for (auto& c : j["controls"]) {
      EXPECT_EQ(c["verdict"], "fails") << name << ": " << c.dump();
      EXPECT_FALSE(c["passed"].get<bool>()) << name << ": " << c.dump();
      EXPECT_GT(c["evaluation_id"].get<int64_t>(), 0) << name;
    }
  }
}

// A reference that ignores its input: kforge check names the controls that pass, says
// why, fails, and records every control's evaluation.
TEST(cli, check_flags_a_weak_problem_and_names_the_control) {
  test::temp_dir d;
  const auto db = (d / "k.db").string();
  test::write(d / "weak" / "problem.toml", "name = \"weak\"\nbackend = \"cpu\"\n"
                                           "[[inputs]]\nname = \"x\"\nshape = [64]\n"
                                           "[[outputs]]\nname = \"y\"\nshape = [64]\n"
                                           "[eval]\ntrials_per_case = 1\n");
  test::write(d / "weak" / "reference.cpp", "#include <kforge/kernel.h>\n"
                                            "KF_EXPORT int kf_forward(const kf_args* a) {\n"
                                            "  for (int i = 0; i < 64; ++i) ((KF_REAL*)a->outputs[0].data)[i] = 0;\n"
                                            "  return 0;\n}\n");
  auto r = kforge_run({"--db", db, "check", (d / "weak").string(), "--json"});
  EXPECT_EQ(r.code, 1) << r.out;
  auto j = json_of(r.out);
  EXPECT_FALSE(j["ok"].get<bool>());
  EXPECT_EQ(j["reference"]["status"], "passed");
  std::map<std::string, nlohmann::json> c;
  for (auto& e : j["controls"]) c[e["name"]] = e;
  ASSERT_EQ(c.size(), 5u) << r.out;
  EXPECT_EQ(c["zeros"]["verdict"], "passes");
  EXPECT_TRUE(c["zeros"]["passed"].get<bool>());
  EXPECT_NE(c["zeros"]["message"].get<std::string>().find("all-zero output passes"), std::string::npos);
  EXPECT_EQ(c["other_seed"]["verdict"], "passes");
  EXPECT_EQ(c["constant"]["verdict"], "fails");
  EXPECT_EQ(c["uninitialised"]["status"], "unwritten");
  EXPECT_NE(j["controls_summary"].get<std::string>().find("zeros, other_seed"), std::string::npos);

  store::store s(db);
  auto ev = s.get_evaluation(c["zeros"]["evaluation_id"].get<int64_t>());
  ASSERT_TRUE(ev.has_value());
  EXPECT_EQ(ev->status, "passed");
  EXPECT_EQ(s.get_candidate(ev->candidate_id)->origin, "control:zeros");

  auto human = kforge_run({"--db", db, "check", (d / "weak").string()});
  EXPECT_EQ(human.code, 1);
  EXPECT_NE(human.out.find("control    zeros          PASSES: an all-zero output passes"), std::string::npos) << human.out;
  EXPECT_NE(human.out.find("control    constant       fails (tolerance): "), std::string::npos) << human.out;
  EXPECT_NE(human.out.find("check    FAILED"), std::string::npos) << human.out;

  auto skipped = kforge_run({"--db", db, "check", (d / "weak").string(), "--json", "--no-controls"});
  EXPECT_EQ(skipped.code, 0) << skipped.out;
  EXPECT_TRUE(json_of(skipped.out)["controls"].is_null());
}

TEST(cli, a_killed_run_keeps_what_it_finished) {
  test::temp_dir d;
  const auto db = (d / "k.db").string();
  auto first = kforge_run({"--db", db, "eval", problem("gelu"), problem("gelu") + "/seed.cpp", "--no-time", "--json",
                           "--trials", "1"});
  ASSERT_EQ(first.code, 0) << first.out;
  const auto first_id = json_of(first.out)["evaluation_id"].get<int64_t>();

  test::write(d / "hang.cpp", "#include <kforge/kernel.h>\nKF_EXPORT int kf_forward(const kf_args*) { for (volatile int i = 0;; i = i) {} }\n");
  pid_t pid = ::fork();
  if (pid == 0) {
    std::string bin = test::kforge_binary().string(), p = problem("gelu"), c = (d / "hang.cpp").string();
    ::execl(bin.c_str(), bin.c_str(), "--db", db.c_str(), "eval", p.c_str(), c.c_str(), "--timeout", "600",
            static_cast<char*>(nullptr));
    ::_exit(127);
  }
  // Wait until the hanging evaluation has been opened, then kill kforge outright.
  bool running = false;
  for (int i = 0; i < 600 && !running; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    store::store s(db);
    for (auto& e : s.list_evaluations())
      if (e.id != first_id && e.status == "running" && !s.get_evaluation(e.id)->checks.empty()) running = true;
    if (!running)
      for (auto& e : s.list_evaluations())
        if (e.id != first_id && !s.builds_of(e.candidate_id).empty()) running = true;
  }
  ::kill(pid, SIGKILL);
  ::waitpid(pid, nullptr, 0);
  ASSERT_TRUE(running);

  store::store s(db);
  auto ev = s.get_evaluation(first_id);
  ASSERT_TRUE(ev.has_value());
  EXPECT_EQ(ev->status, "passed");
  EXPECT_GT(ev->checks.size(), 5u);
  auto rows = s.list_evaluations();
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[0].status, "interrupted"); // its kforge is gone: visible, marked, nothing before it lost
  EXPECT_NE(s.get_evaluation(rows[0].id)->message.find("pid " + std::to_string(pid)), std::string::npos);
  auto shown = kforge_run({"--db", db, "show"});
  EXPECT_NE(shown.out.find("interrupted"), std::string::npos) << shown.out;
  auto one = kforge_run({"--db", db, "show", std::to_string(rows[0].id), "--json"});
  EXPECT_EQ(json_of(one.out)["status"], "interrupted") << one.out;
  auto log = kforge_run({"--db", db, "log"});
  EXPECT_NE(log.out.find("interrupted"), std::string::npos) << log.out;
}

TEST(cli, the_experiment_log_keeps_hypotheses_predictions_and_what_was_kept) {
  test::temp_dir d;
  const auto db = (d / "k.db").string();
  const auto zeros = d / "zeros.cpp";
  write_file_atomic(zeros, "#include <kforge/kernel.h>\n#include <cstring>\nKF_EXPORT int kf_forward(const kf_args* a) {\n"
                           "  std::memset(a->outputs[0].data, 0, 4u * 1024 * 1024);\n  return 0;\n}\n");
  auto bad = kforge_run({"--db", db, "eval", problem("gelu"), zeros.string(), "--hypothesis", "skip the math entirely",
                         "--predict", "50us", "--time-budget", "0.2", "--trials", "1"});
  EXPECT_EQ(bad.code, 1) << bad.out;
  auto good = kforge_run({"--db", db, "eval", problem("gelu"), problem("gelu") + "/seed.cpp", "--hypothesis",
                          "the seed as written", "--predict", "20ms", "--time-budget", "0.2", "--trials", "1"});
  EXPECT_EQ(good.code, 0) << good.out;
  auto log = kforge_run({"--db", db, "log", "gelu", "--json"});
  ASSERT_EQ(log.code, 0) << log.out;
  auto j = json_of(log.out);
  EXPECT_EQ(j["schema"], "kforge.log/1");
  ASSERT_EQ(j["entries"].size(), 2u);
  EXPECT_EQ(j["entries"][0]["hypothesis"], "skip the math entirely");
  EXPECT_NEAR(j["entries"][0]["predicted_s"].get<double>(), 50e-6, 1e-12);
  EXPECT_FALSE(j["entries"][0]["kept"].get<bool>());
  EXPECT_NE(j["entries"][0]["status"], "passed");
  EXPECT_TRUE(j["entries"][1]["kept"].get<bool>()) << "the first passing candidate is the best so far";
  auto table = kforge_run({"--db", db, "log"});
  EXPECT_NE(table.out.find("the seed as written"), std::string::npos) << table.out;
  EXPECT_NE(table.out.find("kept"), std::string::npos);
  EXPECT_EQ(kforge_run({"--db", db, "eval", problem("gelu"), zeros.string(), "--predict", "fast"}).code, 2);
}

TEST(cli, eval_says_what_confined_its_workers) {
  test::temp_dir d;
  auto r = kforge_run({"--db", (d / "k.db").string(), "eval", problem("gelu"), problem("gelu") + "/seed.cpp", "--no-time",
                       "--trials", "1"});
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("  confined "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("verify"), std::string::npos) << r.out;
  EXPECT_TRUE(r.out.find(" layers  (") != std::string::npos || r.out.find("NOT CONFINED") != std::string::npos) << r.out;
}

TEST(cli, eval_param_picks_a_declared_value_and_refuses_others) {
  test::temp_dir d;
  const auto db = (d / "k.db").string();
  const auto seed = problem("gelu") + "/seed.cpp"; // declares CHUNK in {1024, 4096, 16384, 65536}
  auto ok = kforge_run({"--db", db, "eval", problem("gelu"), seed, "--param", "CHUNK=16384", "--no-time", "--trials", "1",
                        "--json"});
  ASSERT_EQ(ok.code, 0) << ok.out;
  EXPECT_EQ(json_of(ok.out)["status"], "passed");
  auto row = store::store(db).list_evaluations("", 1).at(0);
  EXPECT_NE(row.candidate_label.find("CHUNK=16384"), std::string::npos) << row.candidate_label;
  auto bad = kforge_run({"--db", db, "eval", problem("gelu"), seed, "--param", "CHUNK=100"});
  EXPECT_EQ(bad.code, 2);
  EXPECT_NE(bad.out.find("CHUNK=100"), std::string::npos) << bad.out;
  EXPECT_EQ(kforge_run({"--db", db, "eval", problem("gelu"), seed, "--param", "NOPE=1"}).code, 2);
  EXPECT_EQ(kforge_run({"--db", db, "eval", problem("gelu"), seed, "--param", "CHUNK"}).code, 2);
}

namespace {

/// gelu without tunable parameters, so that the candidate's own file is what the compiler reads.
std::string plain_gelu() {
  std::string s = read_file(test::problems_dir() / "gelu" / "seed.cpp");
  s.erase(s.find("// kforge: param"), s.find('\n', s.find("// kforge: param")) - s.find("// kforge: param") + 1);
  for (auto at = s.find("CHUNK"); at != std::string::npos; at = s.find("CHUNK")) s.replace(at, 5, "4096");
  return s;
}

} // namespace

TEST(cli, a_directory_is_not_a_candidate) {
  test::temp_dir d;
  std::filesystem::create_directories(d / "kernels.cpp");
  for (bool json : {false, true}) {
    std::vector<std::string> args = {"--db", (d / "k.db").string(), "eval", problem("gelu"), (d / "kernels.cpp").string()};
    if (json) args.push_back("--json");
    auto r = kforge_run(args);
    EXPECT_EQ(r.code, 2) << r.out;
    EXPECT_NE(r.out.find((d / "kernels.cpp").string() + " is a directory, not a candidate source file"),
              std::string::npos)
        << r.out;
  }
  auto device = kforge_run({"--db", (d / "k.db").string(), "eval", problem("gelu"), "/dev/null"});
  EXPECT_EQ(device.code, 2) << device.out;
  EXPECT_NE(device.out.find("not a regular file"), std::string::npos) << device.out;
}

TEST(cli, a_binary_candidate_fails_to_build_and_is_stored_byte_exact) {
  test::temp_dir d;
  const auto db = (d / "k.db").string();
  std::string bytes = "\xff\xfe";
  for (int b = 0; b < 256; ++b) bytes += static_cast<char>(b);
  write_file_atomic(d / "bin.cpp", bytes);
  auto human = kforge_run({"--db", db, "eval", problem("gelu"), (d / "bin.cpp").string()});
  EXPECT_EQ(human.code, 1) << human.out;
  EXPECT_NE(human.out.find("build    FAILED"), std::string::npos) << human.out;
  auto r = kforge_run({"--db", db, "eval", problem("gelu"), (d / "bin.cpp").string(), "--json"});
  ASSERT_EQ(r.code, 1) << r.out;
  auto j = json_of(r.out);
  EXPECT_EQ(j["status"], "build_failed");
  store::store s(db);
  auto cand = s.get_candidate(j["candidate"]["id"].get<int64_t>());
  ASSERT_TRUE(cand);
  EXPECT_EQ(cand->source, bytes);
  auto shown = kforge_run({"--db", db, "show", std::to_string(j["evaluation_id"].get<int64_t>()), "--json", "--source"});
  EXPECT_EQ(shown.code, 0) << shown.out;
  EXPECT_EQ(json_of(shown.out)["status"], "build_failed");
  auto raw = kforge_run({"--db", db, "show", std::to_string(j["evaluation_id"].get<int64_t>()), "--source"});
  EXPECT_EQ(raw.code, 0);
  EXPECT_NE(raw.out.find(bytes), std::string::npos) << "the source is printed as it is";
}

TEST(cli, a_file_name_that_is_not_utf8_is_handled_as_bytes) {
  test::temp_dir d;
  const auto db = (d / "k.db").string();
  const auto name = d / "\xff\xfe-gelu.cpp";
  write_file_atomic(name, plain_gelu() + "// caf\xe9 in Latin-1, \xff too\n");
  auto r = kforge_run({"--db", db, "eval", problem("gelu"), name.string(), "--json", "--no-time", "--trials", "1"});
  ASSERT_EQ(r.code, 0) << r.out;
  auto j = json_of(r.out);
  EXPECT_EQ(j["status"], "passed");
  EXPECT_NE(j["candidate"]["path"].get<std::string>().find("\\xff\\xfe-gelu.cpp"), std::string::npos) << j["candidate"];
  auto human = kforge_run({"--db", db, "eval", problem("gelu"), name.string(), "--no-time", "--trials", "1"});
  EXPECT_EQ(human.code, 0) << human.out;
  EXPECT_NE(human.out.find("\\xff\\xfe-gelu.cpp"), std::string::npos) << human.out;
  for (auto args : std::vector<std::vector<std::string>>{{"show"}, {"show", "--json"}, {"log"}, {"log", "--json"},
                                                         {"show", std::to_string(j["evaluation_id"].get<int64_t>()), "--json"}}) {
    args.insert(args.begin(), {"--db", db});
    auto shown = kforge_run(args);
    EXPECT_EQ(shown.code, 0) << args.back() << "\n" << shown.out;
  }
  store::store s(db);
  EXPECT_EQ(s.get_candidate(j["candidate"]["id"].get<int64_t>())->source, read_file(name));
  // A missing file with such a name is a plain usage error that names it.
  auto missing = kforge_run({"--db", db, "eval", problem("gelu"), (d / "\xff-none.cpp").string()});
  EXPECT_EQ(missing.code, 2) << missing.out;
  EXPECT_NE(missing.out.find("\\xff-none.cpp: candidate file not found"), std::string::npos) << missing.out;
}

TEST(cli, a_candidate_that_prints_stray_bytes_and_crashes_is_reported_not_an_internal_error) {
  test::temp_dir d;
  const auto db = (d / "k.db").string();
  write_file_atomic(d / "noisy.cpp", "#include <kforge/kernel.h>\n#include <cstdio>\n#include <cstdlib>\n"
                                     "KF_EXPORT int kf_forward(const kf_args*) {\n"
                                     "  std::fputs(\"\\xff\\xfe\\xc0 garbage \\x01\\n\", stdout);\n"
                                     "  std::fputs(\"\\xed\\xa0\\x80 more\\n\", stderr);\n  std::fflush(nullptr);\n"
                                     "  std::abort();\n}\n");
  auto r = kforge_run({"--db", db, "eval", problem("gelu"), (d / "noisy.cpp").string(), "--json", "--trials", "1"});
  ASSERT_EQ(r.code, 1) << r.out;
  auto j = json_of(r.out);
  EXPECT_EQ(j["status"], "crashed");
  EXPECT_NE(j.dump().find("garbage"), std::string::npos) << "the output is kept, made valid UTF-8";
  auto shown = kforge_run({"--db", db, "show", std::to_string(j["evaluation_id"].get<int64_t>()), "--json"});
  EXPECT_EQ(shown.code, 0) << shown.out;
  EXPECT_EQ(json_of(shown.out)["status"], "crashed");
}

TEST(cli, a_key_a_candidate_prints_is_scrubbed_from_the_record_and_the_output) {
  // The candidate knows the key (it is in its source, as if it had read it from the
  // environment or a file), prints it and crashes: kforge's own environment holds it as
  // KFORGE_E2E_API_KEY, so it is a secret wherever it turns up.
  const std::string key = "sk-e2e-0123456789abcdefXYZ";
  ::setenv("KFORGE_E2E_API_KEY", key.c_str(), 1);
  test::temp_dir d;
  const auto db = (d / "k.db").string();
  write_file_atomic(d / "leak.cpp", "#include <kforge/kernel.h>\n#include <cstdio>\n#include <cstdlib>\n"
                                    "KF_EXPORT int kf_forward(const kf_args*) {\n"
                                    "  std::printf(\"the key: %s\\n\", \"" + key + "\");\n"
                                    "  std::fprintf(stderr, \"again: %s\\n\", \"" + key + "\");\n  std::fflush(nullptr);\n"
                                    "  std::abort();\n}\n");
  auto r = kforge_run({"--db", db, "eval", problem("gelu"), (d / "leak.cpp").string(), "--json", "--trials", "1"});
  auto human = kforge_run({"--db", db, "eval", problem("gelu"), (d / "leak.cpp").string(), "--trials", "1"});
  ::unsetenv("KFORGE_E2E_API_KEY");
  ASSERT_EQ(r.code, 1) << r.out;
  EXPECT_EQ(r.out.find(key), std::string::npos) << r.out;
  EXPECT_EQ(human.out.find(key), std::string::npos) << human.out;
  auto j = json_of(r.out);
  EXPECT_EQ(j["status"], "crashed");
  EXPECT_NE(r.out.find("the key: [redacted:KFORGE_E2E_API_KEY]"), std::string::npos) << r.out;

  store::store s(db);
  auto ev = s.get_evaluation(j["evaluation_id"].get<int64_t>());
  ASSERT_TRUE(ev);
  std::string recorded = ev->message + ev->summary_json;
  for (auto& c : ev->checks) recorded += c.detail_json;
  EXPECT_EQ(recorded.find(key), std::string::npos) << recorded;
  EXPECT_NE(recorded.find("[redacted:KFORGE_E2E_API_KEY]"), std::string::npos) << recorded;
}

namespace {

// A TCP port on loopback that accepts connections (the kernel's backlog) and never answers:
// an LLM server stuck on a request.
struct silent_listener {
  int fd = -1;
  int port = 0;
  silent_listener() {
    fd = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    EXPECT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
    EXPECT_EQ(::listen(fd, 16), 0);
    socklen_t n = sizeof a;
    ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &n);
    port = ntohs(a.sin_port);
  }
  ~silent_listener() { ::close(fd); }
};

// The LLM variables of the developer's shell must not leak into these runs.
void clear_llm_environment() {
  for (auto v : {"OPENAI_API_KEY", "OPENAI_BASE_URL", "ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL", "KFORGE_CONFIG"})
    ::unsetenv(v);
}

} // namespace

TEST(cli, an_llm_without_a_key_is_exit_2_naming_the_variable) {
  clear_llm_environment();
  test::temp_dir d;
  auto r = kforge_run({"--db", (d / "k.db").string(), "optimize", problem("gelu"), "--llm", "openai:gpt-5-mini"});
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.out.find("OPENAI_API_KEY"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("internal error"), std::string::npos) << r.out;
  auto ping = kforge_run({"llm", "ping", "--llm", "openai:gpt-5-mini"});
  EXPECT_EQ(ping.code, 2) << ping.out;
  EXPECT_NE(ping.out.find("OPENAI_API_KEY"), std::string::npos) << ping.out;
}

TEST(cli, a_server_that_refuses_ends_the_run_at_once_with_exit_2) {
  clear_llm_environment();
  test::temp_dir d;
  const auto db = (d / "k.db").string();
  const std::string url = "http://127.0.0.1:" + std::to_string(test::closed_loopback_port()) + "/v1";
  auto r = kforge_run({"--db", db, "optimize", problem("gelu"), "--strategy", "refine", "--llm", "openai:gemma",
                       "--base-url", url, "--trials", "1", "--time-budget", "0.2", "--tune-budget", "1"});
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.out.find(url + "/chat/completions"), std::string::npos) << "names the URL: " << r.out;
  EXPECT_NE(r.out.find("is the server running"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("--resume"), std::string::npos) << r.out;
  store::store s(db);
  auto runs = s.list_runs();
  ASSERT_EQ(runs.size(), 1u);
  EXPECT_EQ(runs[0].status, "failed");
  EXPECT_NE(runs[0].stop_reason.find(url), std::string::npos) << runs[0].stop_reason;
  auto calls = s.llm_calls_of(runs[0].id);
  ASSERT_EQ(calls.size(), 1u) << "one call, not one per round";
  EXPECT_EQ(calls[0].error_kind, "unreachable");

  auto ping = kforge_run({"llm", "ping", "--llm", "openai:gemma", "--base-url", url, "--json"});
  EXPECT_EQ(ping.code, 2) << ping.out;
  auto j = json_of(ping.out);
  EXPECT_EQ(j["schema"], "kforge.llm-ping/1");
  EXPECT_EQ(j["models"][0]["ok"], false);
  EXPECT_EQ(j["models"][0]["error_kind"], "unreachable");

  auto bad = kforge_run({"--db", db, "optimize", problem("gelu"), "--llm", "openai:gemma", "--base-url", "127.0.0.1:1"});
  EXPECT_EQ(bad.code, 2) << bad.out;
  EXPECT_NE(bad.out.find("--base-url: must be an http:// or https:// URL"), std::string::npos) << bad.out;
}

TEST(cli, a_killed_optimize_is_interrupted_and_resumes) {
  clear_llm_environment();
  test::temp_dir d;
  const auto db = (d / "k.db").string();
  silent_listener stuck;
  const std::string url = "http://127.0.0.1:" + std::to_string(stuck.port) + "/v1";
  pid_t pid = ::fork();
  if (pid == 0) {
    std::string bin = test::kforge_binary().string(), p = problem("gelu");
    ::execl(bin.c_str(), bin.c_str(), "--db", db.c_str(), "optimize", p.c_str(), "--strategy", "refine", "--llm",
            "openai:gemma", "--base-url", url.c_str(), "--trials", "1", "--time-budget", "0.2", "--tune-budget", "1",
            static_cast<char*>(nullptr));
    ::_exit(127);
  }
  // Wait for the seed's evaluation to be recorded (the LLM call comes next), then kill kforge.
  bool seeded = false;
  for (int i = 0; i < 900 && !seeded; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    if (!std::filesystem::exists(db)) continue;
    store::store s(db);
    auto runs = s.list_runs();
    seeded = !runs.empty() && !s.run_evaluations(runs[0].id).empty() &&
             s.run_evaluations(runs[0].id)[0].status == "passed";
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  ::kill(pid, SIGKILL);
  ::waitpid(pid, nullptr, 0);
  ASSERT_TRUE(seeded);

  store::store s(db);
  auto run = s.list_runs().at(0);
  EXPECT_EQ(run.status, "interrupted");
  EXPECT_NE(run.stop_reason.find("pid " + std::to_string(pid)), std::string::npos) << run.stop_reason;

  // --resume continues it: the seed is not judged again; this time the server is gone.
  const std::string gone = "http://127.0.0.1:" + std::to_string(test::closed_loopback_port()) + "/v1";
  auto r = kforge_run({"--db", db, "optimize", problem("gelu"), "--resume", std::to_string(run.id), "--llm",
                       "openai:gemma", "--base-url", gone});
  EXPECT_EQ(r.code, 2) << r.out;
  store::store after(db);
  EXPECT_EQ(after.get_run(run.id)->resumes, 1);
  for (auto& e : after.run_evaluations(run.id)) EXPECT_TRUE(e.step == "seed" || e.step == "tune") << e.step;
}
