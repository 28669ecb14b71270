// How a worker can end, each forced by a stand-in worker script: the parent must
// classify every one and carry on.
#include "core/fd_passing.hpp"
#include "test_util.hpp"
#include "worker/protocol.hpp"
#include "worker/evaluate.hpp"
#include "worker/supervisor.hpp"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <thread>

using namespace kforge;

namespace {
std::filesystem::path script(const test::temp_dir& d, const std::string& name, const std::string& body) {
  auto p = d / name;
  test::write(p, "#!/bin/sh\ncat >/dev/null\n" + body + "\n");
  ::chmod(p.c_str(), 0755);
  return p;
}
} // namespace

TEST(protocol, frames_round_trip_across_arbitrary_chunking) {
  int fds[2];
  ASSERT_EQ(::pipe(fds), 0);
  auto n = worker::make_nonce();
  worker::channel_writer w(fds[1], n);
  std::vector<std::uint8_t> payload(1000);
  for (std::size_t i = 0; i < payload.size(); ++i) payload[i] = static_cast<std::uint8_t>(i);
  w.send({{"type", "output"}, {"k", 1}}, payload.data(), payload.size());
  w.send({{"type", "done"}});
  ::close(fds[1]);
  std::string all;
  char buf[4096];
  ssize_t r;
  while ((r = ::read(fds[0], buf, sizeof buf)) > 0) all.append(buf, r);
  ::close(fds[0]);
  worker::channel_reader rd(n);
  std::vector<worker::message> got;
  for (std::size_t i = 0; i < all.size(); i += 7) { // feed in 7-byte pieces
    rd.feed(all.data() + i, std::min<std::size_t>(7, all.size() - i));
    while (auto m = rd.next()) got.push_back(*m);
  }
  ASSERT_TRUE(rd.error().empty()) << rd.error();
  ASSERT_EQ(got.size(), 2u);
  EXPECT_EQ(got[0].header["k"], 1);
  EXPECT_EQ(got[0].payload, payload);
  EXPECT_EQ(got[1].header["type"], "done");
}

TEST(protocol, a_frame_with_the_wrong_nonce_is_forged) {
  auto a = worker::make_nonce(), b = worker::make_nonce();
  int fds[2];
  ASSERT_EQ(::pipe(fds), 0);
  worker::channel_writer(fds[1], a).send({{"type", "done"}});
  ::close(fds[1]);
  char buf[256];
  ssize_t r = ::read(fds[0], buf, sizeof buf);
  ::close(fds[0]);
  worker::channel_reader rd(b);
  rd.feed(buf, r);
  EXPECT_FALSE(rd.next().has_value());
  EXPECT_NE(rd.error().find("nonce"), std::string::npos);
}

TEST(supervisor, exit_zero_without_result_is_exited_early) {
  test::temp_dir d;
  auto o = worker::run_worker(script(d, "w", "echo PASS; echo '{\"status\":\"passed\"}'; exit 0"), {}, 10);
  EXPECT_EQ(o.end, worker::worker_end::exited_early);
  EXPECT_EQ(o.exit_code, 0);
  EXPECT_NE(o.output.find("PASS"), std::string::npos); // captured, never trusted
}

TEST(supervisor, a_signal_is_a_crash_with_its_name) {
  test::temp_dir d;
  auto o = worker::run_worker(script(d, "w", "kill -SEGV $$"), {}, 10);
  EXPECT_EQ(o.end, worker::worker_end::crashed);
  EXPECT_EQ(o.signal, 11);
  EXPECT_NE(o.detail.find("SIGSEGV"), std::string::npos);
  auto a = worker::run_worker(script(d, "a", "kill -ABRT $$"), {}, 10);
  EXPECT_EQ(a.end, worker::worker_end::crashed);
  EXPECT_NE(a.detail.find("SIGABRT"), std::string::npos);
}

TEST(supervisor, a_hang_is_killed_by_the_watchdog_with_its_children) {
  test::temp_dir d;
  auto o = worker::run_worker(script(d, "w", "sleep 100 & sleep 100"), {}, 0.5);
  EXPECT_EQ(o.end, worker::worker_end::timeout);
  EXPECT_LT(o.wall_s, 5.0);
}

TEST(supervisor, junk_on_the_result_channel_is_a_protocol_error) {
  test::temp_dir d;
  auto o = worker::run_worker(script(d, "w", "printf 'KFW1 {\"type\":\"done\"}' >&3; exit 0"), {}, 10);
  EXPECT_EQ(o.end, worker::worker_end::protocol_error);
}

TEST(supervisor, a_child_holding_the_pipes_does_not_hang_the_parent) {
  test::temp_dir d;
  auto o = worker::run_worker(script(d, "w", "(sleep 100 &) ; exit 3"), {}, 30);
  EXPECT_EQ(o.end, worker::worker_end::exited_early);
  EXPECT_EQ(o.exit_code, 3);
  EXPECT_LT(o.wall_s, 10.0);
}

TEST(supervisor, an_exception_from_the_sink_comes_back_after_the_worker_is_killed) {
  // A Python stand-in for the worker: run unconfined (its interpreter may live anywhere); this
  // test is about the sink, not confinement.
  ::setenv("KFORGE_SANDBOX", "off", 1);
  struct restore { ~restore() { ::unsetenv("KFORGE_SANDBOX"); } } restore_sandbox;
  test::temp_dir d;
  // A stand-in worker in Python: one well-formed frame with the job's nonce, then it hangs.
  const auto w = d / "w";
  test::write(w, "#!/usr/bin/env python3\n"
                 "import json, os, struct, sys, time\n"
                 "job = json.load(sys.stdin)\n"
                 "open(sys.argv[0] + '.pid', 'w').write(str(os.getpid()))\n"
                 "h = json.dumps({'type': 'progress'}).encode()\n"
                 "os.write(3, b'KFW1' + bytes.fromhex(job['nonce']) + struct.pack('<I', len(h)) + h + struct.pack('<Q', 0))\n"
                 "time.sleep(100)\n");
  ::chmod(w.c_str(), 0755);
  int frames = 0;
  EXPECT_THROW((void)worker::run_worker(w, {}, 60, 64 * 1024, {},
                                        [&](worker::message&) {
                                          ++frames;
                                          throw std::runtime_error("the sink gave up");
                                        }),
               std::runtime_error);
  EXPECT_EQ(frames, 1);
  const pid_t pid = std::stoi(read_file(d / "w.pid"));
  EXPECT_NE(::kill(pid, 0), 0) << "the worker outlived the exception"; // killed and reaped
}

TEST(supervisor, missing_executable_is_a_clear_error) {
  EXPECT_THROW((void)worker::run_worker("/nonexistent/kforge-worker", {}, 1), std::exception);
}

// Sessions: the job is the first line on the worker's stdin, commands the lines after it.
namespace {
// A stand-in interactive worker: "ready", then one reply per command, "done" at end of input.
std::filesystem::path interactive_worker(const test::temp_dir& d) {
  const auto w = d / "iw";
  test::write(w, "#!/usr/bin/env python3\n"
                 "import json, os, struct, sys, time\n"
                 "job = json.loads(sys.stdin.readline())\n"
                 "nonce = bytes.fromhex(job['nonce'])\n"
                 "def send(h):\n"
                 "    b = json.dumps(h).encode()\n"
                 "    os.write(3, b'KFW1' + nonce + struct.pack('<I', len(b)) + b + struct.pack('<Q', 0))\n"
                 "send({'type': 'ready', 'role': job['role']})\n"
                 "for line in sys.stdin:\n"
                 "    cmd = json.loads(line)\n"
                 "    if cmd['cmd'] == 'double': send({'type': 'answer', 'n': 2 * cmd['n']})\n"
                 "    if cmd['cmd'] == 'hang': time.sleep(100)\n"
                 "    if cmd['cmd'] == 'crash': os.kill(os.getpid(), 11)\n"
                 "    if cmd['cmd'] == 'when': send({'type': 'answer', 'at': time.time()})\n"
                 "    if cmd['cmd'] == 'fds':\n"
                 "        import socket\n"
                 "        msg, fds, _, _ = socket.recv_fds(socket.socket(fileno=5), 4096, 8)\n"
                 "        for fd in fds: os.write(fd, b'via fd')\n"
                 "        send({'type': 'answer', 'label': msg.decode(), 'n': len(fds)})\n"
                 "send({'type': 'done'})\n");
  ::chmod(w.c_str(), 0755);
  return w;
}
} // namespace

TEST(session, answers_commands_in_order_then_ends_cleanly) {
  test::temp_dir d;
  worker::worker_session s(interactive_worker(d), {{"role", "time"}}, {.timeout_s = 10});
  auto ready = s.wait_for("ready");
  ASSERT_TRUE(ready.has_value());
  EXPECT_EQ((*ready)["role"], "time");
  for (int n : {1, 21, 5}) {
    ASSERT_TRUE(s.send({{"cmd", "double"}, {"n", n}}));
    auto a = s.wait_for("answer");
    ASSERT_TRUE(a.has_value());
    EXPECT_EQ((*a)["n"], 2 * n);
  }
  const auto o = s.finish();
  EXPECT_EQ(o.end, worker::worker_end::done) << o.detail;
  ASSERT_EQ(o.messages.size(), 5u); // ready, three answers, done
  EXPECT_EQ(o.messages.back().header["type"], "done");
}

TEST(session, the_watchdog_counts_a_step_from_the_command_not_the_idle_time_before_it) {
  test::temp_dir d;
  worker::worker_session s(interactive_worker(d), {{"role", "time"}}, {.timeout_s = 1});
  ASSERT_TRUE(s.wait_for("ready").has_value());
  // The parent is busy elsewhere (with the other timing worker) for longer than one step.
  std::this_thread::sleep_for(std::chrono::milliseconds(1500));
  ASSERT_TRUE(s.send({{"cmd", "double"}, {"n", 4}}));
  EXPECT_TRUE(s.wait_for("answer").has_value()) << "an idle worker was killed";
  // A command it never answers is one step too long.
  ASSERT_TRUE(s.send({{"cmd", "hang"}}));
  EXPECT_FALSE(s.wait_for("answer").has_value());
  const auto o = s.finish();
  EXPECT_EQ(o.end, worker::worker_end::timeout);
  EXPECT_NE(o.detail.find("no progress for 1 s"), std::string::npos) << o.detail;
}

TEST(session, a_worker_that_dies_mid_session_is_classified_by_finish) {
  test::temp_dir d;
  worker::worker_session s(interactive_worker(d), {{"role", "time"}}, {.timeout_s = 10});
  ASSERT_TRUE(s.wait_for("ready").has_value());
  ASSERT_TRUE(s.send({{"cmd", "crash"}}));
  EXPECT_FALSE(s.wait_for("answer").has_value());
  EXPECT_FALSE(s.send({{"cmd", "double"}, {"n", 1}})); // nobody reads its stdin any more
  const auto o = s.finish();
  EXPECT_EQ(o.end, worker::worker_end::crashed);
  EXPECT_EQ(o.signal, 11);
}

// Confinement hooks: every start runs confine_worker's prefix, then the wrapper, then the
// worker; the prefix (kforge-confine) reports on descriptor 4, which only it gets.
namespace {
// A stand-in worker: reads its job, tries to write a report of its own on descriptor 4
// (it must not be able to), says done.
std::filesystem::path reporting_worker(const test::temp_dir& d) {
  const auto w = d / "rw";
  test::write(w, "#!/usr/bin/env python3\n"
                 "import json, os, struct, sys\n"
                 "job = json.loads(sys.stdin.readline())\n"
                 "try:\n"
                 "    os.write(4, b'{\"layers\": \"forged by the worker\"}\\n')\n"
                 "except OSError:\n"
                 "    pass\n"
                 "b = json.dumps({'type': 'done'}).encode()\n"
                 "os.write(3, b'KFW1' + bytes.fromhex(job['nonce']) + struct.pack('<I', len(b)) + b + struct.pack('<Q', 0))\n");
  ::chmod(w.c_str(), 0755);
  return w;
}
// A stand-in kforge-confine: records its arguments, reports, closes the report, runs the rest.
std::filesystem::path launcher(const test::temp_dir& d, const std::string& report) {
  const auto l = d / "confine";
  test::write(l, "#!/bin/sh\nprintf '%s\\n' \"$@\" > \"$0.argv\"\nprintf '%s\\n' '" + report +
                     "' >&4\nexec 4>&-\nshift\nexec \"$@\"\n");
  ::chmod(l.c_str(), 0755);
  return l;
}
} // namespace

TEST(confinement_hooks, the_prefix_runs_first_and_its_report_comes_back) {
  test::temp_dir d;
  const auto l = launcher(d, R"({"layers": [{"name": "seccomp", "active": true, "detail": "stand-in"}]})");
  const auto w = reporting_worker(d);
  int cleaned = 0;
  worker::worker_options o{.timeout_s = 10, .wrapper = {"/usr/bin/env"}};
  o.confined = worker::launch{{l.string(), "--"}, [&] { ++cleaned; }};
  const auto out = worker::run_worker(w, {{"role", "verify"}}, o);
  EXPECT_EQ(out.end, worker::worker_end::done) << out.detail << out.output;
  ASSERT_TRUE(out.confinement.is_object()) << out.confinement.dump();
  EXPECT_EQ(out.confinement["layers"][0]["name"], "seccomp");
  EXPECT_EQ(cleaned, 1);
  // prefix, then the wrapper, then the worker
  EXPECT_EQ(read_file(d / "confine.argv"), "--\n/usr/bin/env\n" + w.string() + "\n");
}

TEST(confinement_hooks, an_unconfined_worker_has_no_report_descriptor_to_forge_one_on) {
  test::temp_dir d;
  // An empty launch: no prefix and no reason (run_worker's default would confine it).
  worker::worker_options o{.timeout_s = 10};
  o.confined = worker::launch{};
  const auto out = worker::run_worker(reporting_worker(d), {{"role", "verify"}}, o);
  EXPECT_EQ(out.end, worker::worker_end::done) << out.detail << out.output;
  EXPECT_TRUE(out.confinement.is_null()) << out.confinement.dump();
}

TEST(confinement_hooks, confinement_turned_off_is_recorded_with_its_reason) {
  test::temp_dir d;
  worker::worker_options o{.timeout_s = 10};
  o.confined = worker::launch{{}, {}, "KFORGE_SANDBOX=off: confinement turned off for debugging"};
  const auto out = worker::run_worker(reporting_worker(d), {{"role", "verify"}}, o);
  EXPECT_EQ(out.end, worker::worker_end::done) << out.detail;
  EXPECT_EQ(out.confinement, (nlohmann::json{{"unconfined", "KFORGE_SANDBOX=off: confinement turned off for debugging"}}));
}

TEST(confinement_hooks, a_report_that_is_not_json_is_said_so) {
  test::temp_dir d;
  worker::worker_options o{.timeout_s = 10};
  o.confined = worker::launch{{launcher(d, "all layers in force, trust me").string(), "--"}, {}};
  const auto out = worker::run_worker(reporting_worker(d), {{"role", "verify"}}, o);
  EXPECT_EQ(out.end, worker::worker_end::done) << out.detail;
  ASSERT_TRUE(out.confinement.is_object());
  EXPECT_TRUE(out.confinement.contains("error")) << out.confinement.dump();
}

TEST(confinement_hooks, every_worker_of_an_evaluation_is_recorded_by_role) {
  test::cache_env env;
  worker::evaluate_options o;
  o.worker_exe = test::worker_binary();
  o.trials_per_case = 1;
  o.time_budget_s = 0.2;
  const auto p = problem::load(test::problems_dir() / "gelu");
  const auto ev = worker::evaluate(p, p.reference, o);
  ASSERT_EQ(ev.status, "passed") << ev.message;
  for (const char* role : {"oracle", "verify", "time", "time_trusted"})
    EXPECT_TRUE(ev.confinement.contains(role)) << role << " missing from " << ev.confinement.dump();
  EXPECT_EQ(worker::to_json(ev, p)["confinement"], ev.confinement);
}

// The GPU-resident path's plumbing, with a stand-in: a socket at share_fd, and the parent
// stopping the worker's process group while the judge works on its buffers.
TEST(session, a_share_socket_is_the_workers_descriptor_5) {
  test::temp_dir d;
  int sv[2];
  make_fd_socket(sv);
  worker::worker_session s(interactive_worker(d), {{"role", "time"}}, {.timeout_s = 10, .share_socket = sv[1]});
  ::close(sv[1]);
  ASSERT_TRUE(s.wait_for("ready").has_value());
  int p[2];
  ASSERT_EQ(::pipe(p), 0);
  send_fds(sv[0], "sets", {p[1]});
  ::close(p[1]);
  ASSERT_TRUE(s.send({{"cmd", "fds"}}));
  auto a = s.wait_for("answer");
  ASSERT_TRUE(a.has_value());
  EXPECT_EQ((*a)["label"], "sets");
  EXPECT_EQ((*a)["n"], 1);
  char buf[16] = {};
  EXPECT_EQ(::read(p[0], buf, sizeof buf), 6);
  EXPECT_STREQ(buf, "via fd");
  ::close(p[0]);
  ::close(sv[0]);
  EXPECT_EQ(s.finish().end, worker::worker_end::done);
}

TEST(session, a_stopped_worker_does_nothing_until_it_is_resumed) {
  test::temp_dir d;
  worker::worker_session s(interactive_worker(d), {{"role", "time"}}, {.timeout_s = 10});
  ASSERT_TRUE(s.wait_for("ready").has_value());
  s.stop();
  ASSERT_TRUE(s.send({{"cmd", "when"}}));
  std::this_thread::sleep_for(std::chrono::milliseconds(400));
  const double resumed = std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
  s.resume();
  auto a = s.wait_for("answer");
  ASSERT_TRUE(a.has_value());
  EXPECT_GE((*a)["at"].get<double>(), resumed - 0.05) << "it answered while stopped";
  s.stop(); // finish() continues a stopped worker before it reads to the end
  EXPECT_EQ(s.finish().end, worker::worker_end::done);
}
