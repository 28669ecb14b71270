// The CPU adversarial regression suite (see adversarial_suite.hpp): run in CI.
#include "adversarial_suite.hpp"
#include "bridge/torch_helper.hpp"
#include "build/compiler.hpp"

#include <iterator>
#include <set>

using namespace kforge;
using test::adversary;

namespace {
class adversarial : public ::testing::TestWithParam<adversary> {};
} // namespace

TEST_P(adversarial, is_rejected_for_the_declared_reason) { test::expect_rejected(GetParam(), test::problems_dir()); }

INSTANTIATE_TEST_SUITE_P(cpu, adversarial, ::testing::ValuesIn(test::load_suite("cpu")), test::test_name);

// Python candidates (ModelNew) that cheat, against the same CPU problems: they need the
// bridge's torch and a shared libpython, and skip saying which is missing.
namespace {
class python_adversarial : public ::testing::TestWithParam<adversary> {};
} // namespace

TEST_P(python_adversarial, is_rejected_for_the_declared_reason) {
  const auto& t = bridge::torch_probe();
  if (!t.available) GTEST_SKIP() << "Python candidates need the bridge's torch: " << t.why;
  if (t.interpreter.value("libpython", "").empty()) GTEST_SKIP() << t.interpreter.value("why_no_libpython", "");
  test::expect_rejected(GetParam(), test::problems_dir());
}

INSTANTIATE_TEST_SUITE_P(python, python_adversarial, ::testing::ValuesIn(test::load_suite("python")), test::test_name);

TEST(adversarial_suite, covers_every_way_to_fail) {
  std::set<std::string> seen;
  for (auto& a : test::load_suite("cpu")) seen.insert(a.expect);
  for (const char* reason : eval::check_order) {
    if (std::find_if(std::begin(eval::gpu_only_checks), std::end(eval::gpu_only_checks),
                     [&](const char* g) { return std::string(g) == reason; }) != std::end(eval::gpu_only_checks))
      continue;
    EXPECT_TRUE(seen.count(reason)) << "no adversarial kernel expects " << reason;
  }
  EXPECT_GE(test::load_suite("cpu").size(), 24u);
}

#ifdef KFORGE_WITH_CUDA
// The CUDA suite runs only on a GPU machine, but every kernel in it must build here (with
// the toolchain kforge picks for it), except those declared not to: a suite that stopped
// compiling would otherwise be found only on the device.
namespace {
class cuda_adversarial_builds : public ::testing::TestWithParam<adversary> {};
} // namespace

TEST_P(cuda_adversarial_builds, compiles_unless_declared_not_to) {
  const auto& a = GetParam();
  const auto p = problem::load(test::source_dir() / "tests" / "gpu" / "problems" / a.problem);
  const auto art = build::compile({.source = a.file, .real = p.dtype}, build::problem_backend::cuda);
  EXPECT_EQ(art.ok, a.expect != "build_failed") << a.file.filename() << ":\n" << art.diagnostics;
}

INSTANTIATE_TEST_SUITE_P(cuda, cuda_adversarial_builds, ::testing::ValuesIn(test::load_suite("cuda")),
                         test::test_name);
#endif
