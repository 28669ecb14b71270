// Every problem shipped in problems/ (CPU and GPU) loads, without a GPU.
#include "problem/problem.hpp"

#include <gtest/gtest.h>

#include <filesystem>

using namespace kforge;

TEST(shipped_problems, every_problem_toml_loads) {
  int n = 0;
  for (auto& e : std::filesystem::recursive_directory_iterator(std::filesystem::path(KFORGE_SOURCE_DIR) / "problems")) {
    if (e.path().filename() != "problem.toml") continue;
    ++n;
    problem::problem p;
    ASSERT_NO_THROW(p = problem::load(e.path().parent_path())) << e.path();
    EXPECT_TRUE(p.seed.has_value()) << e.path() << ": every shipped problem has a naive seed";
    EXPECT_GT(p.work.min_bytes, 0) << e.path();
    for (auto& b : p.baselines) EXPECT_TRUE(std::filesystem::exists(b.source)) << b.source;
  }
  EXPECT_GE(n, 6);
}

TEST(shipped_problems, matmul_has_a_cublas_baseline) {
  auto p = problem::load(std::filesystem::path(KFORGE_SOURCE_DIR) / "problems" / "matmul");
  ASSERT_EQ(p.baselines.size(), 1u);
  EXPECT_EQ(p.baselines[0].name, "cublas");
  EXPECT_EQ(p.backend, problem::backend_kind::cuda);
}

TEST(baselines, bad_entries_name_the_key) {
  const auto dir = std::filesystem::temp_directory_path() / "kforge-baseline-test";
  std::filesystem::create_directories(dir);
  auto write = [&](const std::string& name, const std::string& text) {
    std::FILE* f = std::fopen((dir / name).c_str(), "w");
    std::fputs(text.c_str(), f);
    std::fclose(f);
  };
  write("reference.cpp", "");
  const std::string head = "name = \"b\"\nbackend = \"cpu\"\n[[inputs]]\nname = \"x\"\nshape = [4]\n[[outputs]]\nname = \"y\"\nshape = [4]\n";
  write("problem.toml", head + "[[baselines]]\nname = \"vendor\"\nsource = \"missing.cpp\"\n");
  try {
    (void)problem::load(dir);
    FAIL();
  } catch (const std::exception& e) {
    EXPECT_NE(std::string(e.what()).find("baselines[0].source"), std::string::npos) << e.what();
  }
  write("problem.toml", head + "[[baselines]]\nname = \"reference\"\nsource = \"reference.cpp\"\n");
  EXPECT_THROW((void)problem::load(dir), std::exception);
  std::filesystem::remove_all(dir);
}
