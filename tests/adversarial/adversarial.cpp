// The adversarial regression suite: every kernel in tests/adversarial/cpu/ cheats or
// fails in one known way, declared on its first line:
//   // kforge-adversarial: problem=softmax expect=nonfinite case=large_logits
// and must be rejected with exactly that status (and on that input distribution, when
// given). To add one, drop a file there with that header; it is picked up here.
#include "eval/result.hpp"
#include "problem/problem.hpp"
#include "test_util.hpp"
#include "worker/evaluate.hpp"

#include <gtest/gtest.h>

#include <fstream>
#include <iterator>
#include <map>
#include <regex>
#include <set>

using namespace kforge;

namespace {

struct adversary {
  std::filesystem::path file;
  std::string problem, expect, case_name;
};

std::vector<adversary> load_suite() {
  std::vector<adversary> out;
  const auto dir = test::source_dir() / "tests" / "adversarial" / "cpu";
  const std::regex header(R"(^// kforge-adversarial: problem=(\S+) expect=(\S+)(?: case=(\S+))?)");
  for (auto& e : std::filesystem::directory_iterator(dir)) {
    if (e.path().extension() != ".cpp") continue;
    std::ifstream in(e.path());
    std::string line;
    std::getline(in, line);
    std::smatch m;
    adversary a{e.path(), "", "", ""};
    if (std::regex_search(line, m, header)) {
      a.problem = m[1];
      a.expect = m[2];
      a.case_name = m[3];
    }
    out.push_back(a);
  }
  std::sort(out.begin(), out.end(), [](auto& x, auto& y) { return x.file < y.file; });
  return out;
}

// So CTest names the kernel, not the parameter's bytes.
void PrintTo(const adversary& a, std::ostream* os) { *os << a.file.filename().string(); }

class adversarial : public ::testing::TestWithParam<adversary> {};

} // namespace

TEST_P(adversarial, is_rejected_for_the_declared_reason) {
  const auto& a = GetParam();
  ASSERT_FALSE(a.problem.empty()) << a.file << ": first line must be a kforge-adversarial header";
  ASSERT_LT(eval::check_priority(a.expect), static_cast<int>(std::size(eval::check_order)))
      << a.file << ": unknown expected reason '" << a.expect << "'";
  const auto p = problem::load(test::problems_dir() / a.problem);
  worker::evaluate_options o;
  o.worker_exe = test::worker_binary();
  o.seed = 20261202;
  o.trials_per_case = 1;
  o.time = false;
  o.timeout_s = 8;
  const auto ev = worker::evaluate(p, a.file, o);
  EXPECT_EQ(ev.status, a.expect) << a.file.filename() << ": " << ev.message;
  EXPECT_FALSE(ev.message.empty());
  if (!a.case_name.empty()) {
    bool failed_on_case = false;
    for (auto& c : ev.checks)
      if (!c.passed && c.name == a.expect && c.case_name == a.case_name) failed_on_case = true;
    EXPECT_TRUE(failed_on_case) << a.file.filename() << " should fail '" << a.expect << "' on case " << a.case_name;
  }
}

INSTANTIATE_TEST_SUITE_P(cpu, adversarial, ::testing::ValuesIn(load_suite()),
                         [](const ::testing::TestParamInfo<adversary>& i) {
                           auto n = i.param.file.stem().string();
                           for (auto& ch : n)
                             if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
                           return n;
                         });

TEST(adversarial_suite, covers_every_way_to_fail) {
  std::set<std::string> seen;
  for (auto& a : load_suite()) seen.insert(a.expect);
  for (const char* reason : eval::check_order) EXPECT_TRUE(seen.count(reason)) << "no adversarial kernel expects " << reason;
  EXPECT_GE(load_suite().size(), 24u);
}
