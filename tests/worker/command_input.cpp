// The timing workers' command input (worker/command_input.hpp): polling for the next command
// must not change what is read, only how the wait is spent; and a wait longer than the spin
// still ends with the command, in a blocking read.
#include "worker/command_input.hpp"
#include "cli/format.hpp"
#include "test_util.hpp"
#include "worker/evaluate.hpp"

#include <gtest/gtest.h>

#include <stdlib.h>
#include <unistd.h>

#include <sched.h>

#include <fmt/format.h>

#include <istream>
#include <optional>
#include <utility>
#include <string>
#include <thread>
#include <vector>

using namespace kforge;
using namespace std::chrono_literals;

namespace {

// Writes `chunks` into a pipe with `gap` between them, then closes it; returns the lines read.
std::vector<std::string> read_through(std::chrono::microseconds spin, const std::vector<std::string>& chunks,
                                      std::chrono::milliseconds gap) {
  int fds[2];
  EXPECT_EQ(::pipe(fds), 0);
  std::thread writer([&] {
    for (auto& c : chunks) {
      std::this_thread::sleep_for(gap);
      EXPECT_EQ(::write(fds[1], c.data(), c.size()), static_cast<ssize_t>(c.size()));
    }
    ::close(fds[1]);
  });
  worker::command_input in(fds[0]);
  in.set_spin(spin);
  std::istream s(&in);
  std::vector<std::string> lines;
  for (std::string line; std::getline(s, line);) lines.push_back(line);
  writer.join();
  ::close(fds[0]);
  return lines;
}

} // namespace

TEST(command_input, reads_the_same_lines_spinning_or_not) {
  // Lines split across writes, two lines in one write, and a last line without its newline.
  const std::vector<std::string> chunks = {"{\"cmd\":\"sam", "ple\"}\n{\"cmd\":\"sample\",\"rotation\":1}\n", "{\"cmd\":\"finish\"}"};
  const std::vector<std::string> want = {"{\"cmd\":\"sample\"}", "{\"cmd\":\"sample\",\"rotation\":1}", "{\"cmd\":\"finish\"}"};
  EXPECT_EQ(read_through(0us, chunks, 2ms), want);
  EXPECT_EQ(read_through(50ms, chunks, 2ms), want);
}

TEST(command_input, a_wait_longer_than_the_spin_ends_in_a_blocking_read) {
  // 1 ms of polling, then a 30 ms gap: the command still arrives, in the read that follows.
  EXPECT_EQ(read_through(1ms, {"a\n", "b\n"}, 30ms), (std::vector<std::string>{"a", "b"}));
}

TEST(command_input, the_end_of_input_ends_the_stream_while_spinning) {
  EXPECT_TRUE(read_through(20ms, {}, 0ms).empty());
}

TEST(command_input, the_environment_sets_the_spin_and_zero_turns_it_off) {
  {
    test::scoped_env e("KFORGE_HOST_SPIN_US", "0");
    EXPECT_EQ(worker::default_host_spin(), 0us);
  }
  test::scoped_env e("KFORGE_HOST_SPIN_US", "1500");
  EXPECT_EQ(worker::default_host_spin(), 1500us);
}

namespace {
struct softmax_run {
  problem::problem p;
  worker::evaluation ev;
};

// The CPU softmax's reference evaluated as a candidate and timed briefly, under the
// environment the caller set.
softmax_run evaluate_reference_softmax() {
  test::cache_env env;
  test::temp_dir d;
  auto p = problem::load(test::problems_dir() / "softmax");
  test::write(d / "softmax.cpp", read_file(p.reference));
  worker::evaluate_options o;
  o.worker_exe = test::worker_binary();
  o.trials_per_case = 1;
  o.time_budget_s = 0.3;
  auto ev = worker::evaluate(p, d / "softmax.cpp", o);
  return {std::move(p), std::move(ev)};
}
} // namespace

// End to end on the CPU problem: timing workers that poll time the same calls and say so.
TEST(command_input, an_evaluation_with_polling_timing_workers_passes_and_records_the_spin) {
  test::scoped_env e("KFORGE_HOST_SPIN_US", "2000");
  const auto [p, ev] = evaluate_reference_softmax();
  ASSERT_EQ(ev.status, "passed") << ev.message;
  ASSERT_NE(ev.timing("candidate"), nullptr);
  ASSERT_NE(ev.timing("reference"), nullptr);
  EXPECT_EQ(ev.engine.value("host_spin_us", -1), 2000);
  // `kforge eval` says how the timing workers waited.
  EXPECT_NE(cli::format_evaluation(ev, p, 1, "softmax.cpp").find("polling up to 2 ms"), std::string::npos)
      << cli::format_evaluation(ev, p, 1, "softmax.cpp");
}

namespace {
// Two CPUs this process may run on, or none.
std::optional<std::pair<int, int>> two_allowed_cpus() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (::sched_getaffinity(0, sizeof set, &set) != 0) return std::nullopt;
  std::vector<int> cpus;
  for (int c = 0; c < CPU_SETSIZE && cpus.size() < 2; ++c)
    if (CPU_ISSET(c, &set)) cpus.push_back(c);
  if (cpus.size() < 2) return std::nullopt;
  return std::pair{cpus[0], cpus[1]};
}
} // namespace

TEST(command_input, timing_cpus_are_two_different_cpus_this_process_may_use) {
  const auto cpus = two_allowed_cpus();
  if (!cpus) GTEST_SKIP() << "fewer than two CPUs here";
  const std::string ab = fmt::format("{},{}", cpus->first, cpus->second);
  {
    test::scoped_env e("KFORGE_TIMING_CPUS", ab);
    EXPECT_EQ(worker::timing_cpus(), cpus);
  }
  for (const std::string& bad : std::vector<std::string>{"", "3", fmt::format("{},{}", cpus->first, cpus->first), "1,2,3", "a,b", "-1,0",
                                fmt::format("{},{}", cpus->first, CPU_SETSIZE + 1), "0;1"}) {
    test::scoped_env e("KFORGE_TIMING_CPUS", bad);
    EXPECT_EQ(worker::timing_cpus(), std::nullopt) << "'" << bad << "'";
  }
}

// The timing threads pin themselves inside the sandbox (sched_setaffinity is not refused there,
// or the evaluation would end in a crash), and the evaluation says which CPUs were asked for.
TEST(command_input, an_evaluation_with_pinned_timing_threads_passes_and_records_the_cpus) {
  const auto cpus = two_allowed_cpus();
  if (!cpus) GTEST_SKIP() << "fewer than two CPUs here";
  test::scoped_env e("KFORGE_TIMING_CPUS", fmt::format("{},{}", cpus->first, cpus->second));
  const auto [p, ev] = evaluate_reference_softmax();
  ASSERT_EQ(ev.status, "passed") << ev.message;
  ASSERT_NE(ev.timing("candidate"), nullptr);
  EXPECT_EQ(ev.engine.value("timing_cpus", nlohmann::json()), (nlohmann::json{cpus->first, cpus->second}));
  EXPECT_NE(cli::format_evaluation(ev, p, 1, "softmax.cpp").find(fmt::format("candidate's to CPU {}", cpus->first)),
            std::string::npos)
      << cli::format_evaluation(ev, p, 1, "softmax.cpp");
}
