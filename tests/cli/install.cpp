// `cmake --install build --prefix DIR` gives a kforge that works from anywhere: run from a
// folder outside the source tree, it finds its headers, prompts, report page and helpers
// under DIR (core/fs.hpp data_path) and never the source tree it was built from.
#include "core/fs.hpp"
#include "core/subprocess.hpp"
#include "test_util.hpp"

#include <gtest/gtest.h>

using namespace kforge;
namespace fs = std::filesystem;

namespace {

command_result in_dir(const fs::path& dir, const std::vector<std::string>& argv, double timeout_s = 300) {
  std::vector<std::string> a = {"/bin/sh", "-c", "cd \"$0\" && exec \"$@\"", dir.string()};
  a.insert(a.end(), argv.begin(), argv.end());
  return run_command(a, timeout_s);
}

} // namespace

TEST(install, an_installed_kforge_finds_its_own_data_from_anywhere) {
  const fs::path build = KFORGE_BUILD_DIR;
  if (find_on_path("cmake").empty()) GTEST_SKIP() << "cmake is not on PATH";
  test::temp_dir prefix, work;
  auto inst = run_command({"cmake", "--install", build.string(), "--prefix", prefix.path.string()}, 300);
  ASSERT_TRUE(inst.ok()) << inst.output;
  const auto kforge = (prefix / "bin" / "kforge").string();
  for (auto p : {"bin/kforge", "bin/kforge-worker", "bin/kforge-confine", "share/kforge/include/kforge/kernel.h",
                 "share/kforge/prompts", "share/kforge/controls", "share/kforge/python", "share/kforge/html/report.html",
                 "share/kforge/src/device/calibrate_kernels.cu"})
    EXPECT_TRUE(fs::exists(prefix / p)) << p;

  // A problem and a transcript copied out of the tree: nothing below refers to it.
  fs::copy(test::problems_dir() / "gelu", work / "gelu", fs::copy_options::recursive);
  fs::copy_file(test::source_dir() / "tests" / "search" / "data" / "gelu_refine.llm.jsonl", work / "t.jsonl");
  // Only the cache is named; every variable that points at data or helpers is removed.
  std::vector<std::string> env = {"env"};
  for (auto v : {"KFORGE_PROMPTS", "KFORGE_CONTROLS", "KFORGE_INCLUDE", "KFORGE_WORKER", "KFORGE_CONFINE",
                 "KFORGE_TORCH_HELPER", "KFORGE_DB", "KFORGE_CONFIG", "KFORGE_SOURCE_DIR"})
    env.insert(env.end(), {"-u", v});
  env.push_back("KFORGE_CACHE=" + (work / "cache").string());
  auto with_env = [&](std::vector<std::string> args) {
    std::vector<std::string> a = env;
    a.push_back(kforge);
    a.insert(a.end(), args.begin(), args.end());
    return in_dir(work.path, a);
  };

  // Headers (the candidate's build), the worker and the confinement launcher beside kforge.
  auto ev = with_env({"eval", "gelu", "gelu/seed.cpp", "--no-time"});
  EXPECT_TRUE(ev.ok()) << ev.output;
  EXPECT_NE(ev.output.find("verify   PASSED"), std::string::npos) << ev.output;

  // The prompt templates (an LLM search; answers replayed).
  auto opt = with_env({"optimize", "gelu", "--strategy", "refine", "--llm", "replay:t.jsonl", "--rounds", "1",
                       "--evaluations", "3", "--trials", "1", "--time-budget", "0.1"});
  EXPECT_TRUE(opt.ok()) << opt.output;
  EXPECT_EQ(opt.output.find("prompt templates"), std::string::npos) << opt.output;

  // The report's page and the chart libraries installed beside it.
  auto rep = with_env({"report", "1", "--out", "r.html"});
  ASSERT_TRUE(rep.ok()) << rep.output;
  EXPECT_GT(fs::file_size(work / "r.html"), 100'000u) << "the libraries are inlined";
  EXPECT_EQ(read_file(work / "r.html").find(KFORGE_SOURCE_DIR), std::string::npos)
      << "an installed kforge's page names no path of the source tree it was built from";
}
