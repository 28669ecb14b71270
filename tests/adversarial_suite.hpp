#pragma once
// The adversarial suites (tests/adversarial/<backend>/): every kernel there cheats or
// fails in one known way, declared on its first line:
//   // kforge-adversarial: problem=softmax expect=nonfinite case=large_logits
// and must be rejected with exactly that status (and on that input distribution, when
// given). To add one, drop a file with that header into the folder.
#include "eval/result.hpp"
#include "problem/problem.hpp"
#include "test_util.hpp"
#include "worker/evaluate.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <regex>

namespace kforge::test {

struct adversary {
  std::filesystem::path file;
  std::string problem, expect, case_name;
};

inline void PrintTo(const adversary& a, std::ostream* os) { *os << a.file.filename().string(); }

/// Every .cpp/.cu/.py file of tests/adversarial/<backend>, sorted (a .py file's header is a
/// '#' comment: "# kforge-adversarial: problem=softmax expect=tolerance").
inline std::vector<adversary> load_suite(const std::string& backend) {
  std::vector<adversary> out;
  const auto dir = source_dir() / "tests" / "adversarial" / backend;
  const std::regex header(R"(^(?://|#) kforge-adversarial: problem=(\S+) expect=(\S+)(?: case=(\S+))?)");
  for (auto& e : std::filesystem::directory_iterator(dir)) {
    const auto ext = e.path().extension();
    if (ext != ".cpp" && ext != ".cu" && ext != ".py") continue;
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

/// Evaluates one adversary against problems_root/<problem> and asserts its status.
inline void expect_rejected(const adversary& a, const std::filesystem::path& problems_root) {
  ASSERT_FALSE(a.problem.empty()) << a.file << ": first line must be a kforge-adversarial header";
  ASSERT_LT(eval::check_priority(a.expect), static_cast<int>(std::size(eval::check_order)))
      << a.file << ": unknown expected reason '" << a.expect << "'";
  const auto p = problem::load(problems_root / a.problem);
  worker::evaluate_options o;
  o.worker_exe = worker_binary();
  o.seed = 20261202;
  o.trials_per_case = 1;
  // Timing only where the failure can only show there: a time-only cheat is caught while timed.
  o.time = a.expect == "timed_output" || a.expect == "impossible_time";
  o.time_budget_s = 0.3;
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

inline std::string test_name(const ::testing::TestParamInfo<adversary>& i) {
  auto n = i.param.file.stem().string();
  for (auto& ch : n)
    if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
  return n;
}

} // namespace kforge::test
