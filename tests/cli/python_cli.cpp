// Python (ModelNew) candidates from the command line: an imported KernelBench problem judges a
// ModelNew file directly, the tuner searches `# kforge: param` lines of a Python seed, export
// writes the file as it is, and --dialect is checked against the problem. Plain torch on the
// CPU; tests/gpu/python_candidate.cpp runs Triton and load_inline.
#include "bridge/torch_helper.hpp"
#include "core/fs.hpp"
#include "core/subprocess.hpp"
#include "require_python.hpp"
#include "test_util.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <set>

using namespace kforge;

namespace {

nlohmann::json json_of(const command_result& r) {
  const auto at = r.output.find('{');
  if (at == std::string::npos) return nlohmann::json::object();
  return nlohmann::json::parse(r.output.substr(at), nullptr, false);
}

} // namespace

TEST(python_cli, an_imported_kernelbench_problem_judges_a_model_new_file_directly) {
  REQUIRE_PYTHON_CANDIDATES();
  test::cache_env cache;
  test::temp_dir d;
  const auto k = test::kforge_binary().string();
  auto r = run_command({k, "import", "kernelbench", (std::filesystem::path(KFORGE_TEST_DIR) / "bridge" / "data" /
                                                     "kb_scalar_multiply.py").string(),
                        "--out", (d / "sm").string(), "--backend", "cpu"},
                       600);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  test::write(d / "solution.py", "import torch\n\n\nclass ModelNew(torch.nn.Module):\n    def forward(self, A, s):\n"
                                 "        return A * s\n");
  r = run_command({k, "--db", (d / "k.db").string(), "eval", (d / "sm").string(), (d / "solution.py").string(),
                   "--trials", "1", "--time-budget", "0.2", "--json"},
                  600);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  auto j = json_of(r);
  EXPECT_EQ(j["status"], "passed") << r.output;
  bool python_build = false;
  for (auto& b : j["builds"])
    if (b.value("role", "") == "candidate") python_build = b.value("toolchain", "") == "python";
  EXPECT_TRUE(python_build) << j["builds"].dump();
  // A ModelNew that ignores the scalar is wrong, and says where.
  test::write(d / "wrong.py", "import torch\n\n\nclass ModelNew(torch.nn.Module):\n    def forward(self, A, s):\n"
                              "        return A * 3.0\n");
  r = run_command({k, "--db", (d / "k.db").string(), "eval", (d / "sm").string(), (d / "wrong.py").string(),
                   "--trials", "1", "--no-time", "--json"},
                  600);
  EXPECT_EQ(json_of(r)["status"], "tolerance") << r.output;
}

TEST(python_cli, tune_searches_a_python_seeds_params_and_export_writes_the_best_as_it_is) {
  REQUIRE_PYTHON_CANDIDATES();
  test::cache_env cache;
  test::temp_dir d;
  const auto k = test::kforge_binary().string();
  const auto src = test::problems_dir() / "softmax";
  std::filesystem::create_directories(d / "p");
  std::filesystem::copy_file(src / "reference.cpp", d / "p" / "reference.cpp");
  test::write(d / "p" / "problem.toml", "seed = \"seed.py\"\n" + read_file(src / "problem.toml"));
  test::write(d / "p" / "seed.py", "import torch\n\n# kforge: param CHUNKS = 1 in {1, 2}\n\n\n"
                                   "class ModelNew(torch.nn.Module):\n    def forward(self, x):\n"
                                   "        return torch.cat([torch.softmax(c, dim=-1) for c in x.chunk(CHUNKS)])\n");
  auto r = run_command({k, "--db", (d / "k.db").string(), "optimize", (d / "p").string(), "--strategy", "tune",
                        "--evaluations", "2", "--trials", "1", "--time-budget", "0.2"},
                       900);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  r = run_command({k, "--db", (d / "k.db").string(), "show", "run", "1", "--json"}, 60);
  auto j = json_of(r);
  ASSERT_EQ(j["evaluations"].size(), 2u) << r.output;
  std::set<std::string> tried;
  for (auto& e : j["evaluations"]) {
    EXPECT_EQ(e["status"], "passed") << e.dump();
    tried.insert(e["params"].dump());
  }
  EXPECT_EQ(tried, (std::set<std::string>{R"({"CHUNKS":1})", R"({"CHUNKS":2})"}));
  r = run_command({k, "--db", (d / "k.db").string(), "export", "1", "--out", (d / "x").string()}, 60);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  std::filesystem::path file;
  for (auto& e : std::filesystem::directory_iterator(d / "x"))
    if (e.path().extension() == ".py") file = e.path();
  ASSERT_FALSE(file.empty()) << r.output;
  EXPECT_NE(file.filename().string().find("_best.py"), std::string::npos);
  EXPECT_NE(read_file(file).find("class ModelNew"), std::string::npos);
  EXPECT_NE(read_file(file).find("# kforge: tuned CHUNKS in {1, 2}"), std::string::npos); // the instance, as judged
  EXPECT_FALSE(std::filesystem::exists(d / "x" / "kforge" / "kernel.h"));
  EXPECT_NE(read_file(d / "x" / "README.md").find("from "), std::string::npos);
}

TEST(python_cli, a_dialect_that_does_not_fit_the_problem_is_a_usage_error) {
  test::temp_dir d;
  const auto k = test::kforge_binary().string();
  const auto cpu = (test::problems_dir() / "softmax").string();
  auto r = run_command({k, "--db", (d / "k.db").string(), "optimize", cpu, "--dialect", "triton", "--llm",
                        "replay:/nonexistent.jsonl"},
                       60);
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("--dialect triton does not fit"), std::string::npos) << r.output;
  r = run_command({k, "--db", (d / "k.db").string(), "optimize", cpu, "--dialect", "fortran", "--llm",
                   "replay:/nonexistent.jsonl"},
                  60);
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("unknown"), std::string::npos) << r.output;
}
