// mcp_server::serve while tools run: ping and quick calls are answered during a long call,
// a cancelled call ends and gets no response, progress arrives, calls that use the device
// queue one at a time and say so, and end of input cancels what is still running. The
// client is this test, writing into a pipe the server reads and reading the pipe it writes.
#include "agent/mcp.hpp"

#include <gtest/gtest.h>
#include <poll.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <streambuf>
#include <thread>

using namespace kforge;
using json = nlohmann::json;

namespace {

/// A blocking input streambuf over a file descriptor.
class fd_in final : public std::streambuf {
public:
  explicit fd_in(int fd) : m_fd(fd) {}

protected:
  int_type underflow() override {
    ssize_t n;
    do n = ::read(m_fd, m_buf, sizeof m_buf);
    while (n < 0 && errno == EINTR);
    if (n <= 0) return traits_type::eof();
    setg(m_buf, m_buf, m_buf + n);
    return traits_type::to_int_type(m_buf[0]);
  }

private:
  int m_fd;
  char m_buf[4096];
};

class fd_out final : public std::streambuf {
public:
  explicit fd_out(int fd) : m_fd(fd) {}

protected:
  std::streamsize xsputn(const char* s, std::streamsize n) override { return ::write(m_fd, s, static_cast<size_t>(n)); }
  int_type overflow(int_type c) override {
    const char ch = traits_type::to_char_type(c);
    return ::write(m_fd, &ch, 1) == 1 ? c : traits_type::eof();
  }

private:
  int m_fd;
};

/// Tools for these tests: `slow` runs until cancelled or `ms` pass, reporting each 50 ms;
/// it uses the device, so two of them queue. `quick` answers at once and only reads.
struct slow_tools {
  std::atomic<int> cancelled_seen{0}, finished{0};
  agent::tool_registry reg;
  slow_tools() {
    reg.add({.name = "slow",
             .description = "Runs until cancelled or ms pass",
             .input_schema = {{"type", "object"}, {"properties", {{"ms", {{"type", "integer"}}}}}},
             .uses_device = true,
             .run = [this](const json& a, const agent::call_context& ctx) {
               const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(a.value("ms", 10000));
               for (int i = 0; std::chrono::steady_clock::now() < until; ++i) {
                 if (ctx.is_cancelled()) {
                   ++cancelled_seen;
                   return agent::tool_result{.text = "stopped", .is_error = true};
                 }
                 if (i % 5 == 0) ctx.report(i == 0 ? "build" : "verify");
                 std::this_thread::sleep_for(std::chrono::milliseconds(10));
               }
               ++finished;
               return agent::tool_result{.structured = {{"done", true}}, .text = "done"};
             }});
    reg.add({.name = "quick",
             .description = "Answers at once",
             .input_schema = {{"type", "object"}},
             .read_only = true,
             .run = [](const json&, const agent::call_context&) {
               return agent::tool_result{.structured = {{"quick", true}}, .text = "quick"};
             }});
  }
};

/// The server serving on a thread; the test writes requests and reads its lines.
struct client {
  slow_tools tools;
  agent::mcp_server server{tools.reg};
  int to_server[2]{}, from_server[2]{};
  fd_in in_buf{0};
  fd_out out_buf{0};
  std::istream in{nullptr};
  std::ostream out{nullptr};
  std::thread serving;
  std::string pending;

  client() {
    EXPECT_EQ(::pipe(to_server), 0);
    EXPECT_EQ(::pipe(from_server), 0);
    in_buf = fd_in(to_server[0]);
    out_buf = fd_out(from_server[1]);
    in.rdbuf(&in_buf);
    out.rdbuf(&out_buf);
    serving = std::thread([this] { server.serve(in, out); });
    send({{"jsonrpc", "2.0"}, {"id", 0}, {"method", "initialize"}, {"params", {{"protocolVersion", "2025-06-18"}}}});
    EXPECT_EQ(next()["id"], 0);
  }
  ~client() { close_input(); }
  void close_input() {
    if (to_server[1] >= 0) {
      ::close(to_server[1]);
      to_server[1] = -1;
    }
    if (serving.joinable()) serving.join();
  }
  void send(const json& m) {
    const auto line = m.dump() + "\n";
    ASSERT_EQ(::write(to_server[1], line.data(), line.size()), static_cast<ssize_t>(line.size()));
  }
  void call(int id, const std::string& tool, json args = json::object(), json token = nullptr) {
    json params{{"name", tool}, {"arguments", std::move(args)}};
    if (!token.is_null()) params["_meta"] = {{"progressToken", token}};
    send({{"jsonrpc", "2.0"}, {"id", id}, {"method", "tools/call"}, {"params", params}});
  }
  /// The next line from the server, or null after `timeout_ms`.
  json next(int timeout_ms = 5000) {
    for (;;) {
      if (auto nl = pending.find('\n'); nl != std::string::npos) {
        auto j = json::parse(pending.substr(0, nl));
        pending.erase(0, nl + 1);
        return j;
      }
      pollfd p{from_server[0], POLLIN, 0};
      if (::poll(&p, 1, timeout_ms) <= 0) return nullptr;
      char buf[4096];
      const auto n = ::read(from_server[0], buf, sizeof buf);
      if (n <= 0) return nullptr;
      pending.append(buf, static_cast<size_t>(n));
    }
  }
  /// Lines until the response to `id` (notifications collected in `seen`), or null.
  json response_to(int id, std::vector<json>* seen = nullptr, int timeout_ms = 5000) {
    for (;;) {
      auto j = next(timeout_ms);
      if (j.is_null()) return j;
      if (j.contains("id") && j["id"] == id) return j;
      if (seen) seen->push_back(j);
    }
  }
};

} // namespace

TEST(mcp_serve, ping_and_a_read_only_call_are_answered_while_a_long_call_runs) {
  client c;
  c.call(1, "slow", {{"ms", 3000}});
  const auto t0 = std::chrono::steady_clock::now();
  c.send({{"jsonrpc", "2.0"}, {"id", 2}, {"method", "ping"}});
  ASSERT_FALSE(c.response_to(2).is_null());
  c.call(3, "quick");
  const auto q = c.response_to(3);
  ASSERT_FALSE(q.is_null());
  EXPECT_EQ(q["result"]["structuredContent"]["quick"], true);
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::milliseconds(2000)) << "answered behind the slow call";
  EXPECT_EQ(c.tools.finished, 0);
  const auto slow = c.response_to(1);
  EXPECT_EQ(slow["result"]["structuredContent"]["done"], true);
}

TEST(mcp_serve, a_cancelled_call_ends_and_gets_no_response) {
  client c;
  c.call(1, "slow", {{"ms", 20000}});
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  c.send({{"jsonrpc", "2.0"}, {"method", "notifications/cancelled"}, {"params", {{"requestId", 1}, {"reason", "user"}}}});
  c.send({{"jsonrpc", "2.0"}, {"id", 2}, {"method", "ping"}});
  std::vector<json> seen;
  ASSERT_FALSE(c.response_to(2, &seen).is_null());
  for (int i = 0; i < 100 && c.tools.cancelled_seen == 0; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  EXPECT_EQ(c.tools.cancelled_seen, 1) << "the tool was told";
  c.close_input();
  for (json j; !(j = c.next(200)).is_null();) seen.push_back(j);
  for (const auto& j : seen) EXPECT_FALSE(j.contains("id") && j["id"] == 1) << "a response to a cancelled call: " << j;
  EXPECT_EQ(c.tools.finished, 0);
}

TEST(mcp_serve, progress_arrives_with_increasing_values_and_the_phase) {
  client c;
  c.call(1, "slow", {{"ms", 1500}}, "tok");
  std::vector<json> seen;
  ASSERT_FALSE(c.response_to(1, &seen).is_null());
  double last = -1;
  int n = 0;
  bool phase = false;
  for (const auto& j : seen) {
    if (j.value("method", "") != "notifications/progress") continue;
    EXPECT_EQ(j["params"]["progressToken"], "tok");
    EXPECT_GT(j["params"]["progress"].get<double>(), last);
    last = j["params"]["progress"].get<double>();
    phase = phase || j["params"]["message"].get<std::string>().find("verify") != std::string::npos;
    ++n;
  }
  EXPECT_GE(n, 2) << "a phase change and at least one a second";
  EXPECT_TRUE(phase);
  for (json j; !(j = c.next(1300)).is_null();)
    EXPECT_NE(j.value("method", ""), "notifications/progress") << "progress after the response: " << j;
}

TEST(mcp_serve, calls_that_use_the_device_queue_and_say_their_place) {
  client c;
  c.call(1, "slow", {{"ms", 600}});
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  c.call(2, "slow", {{"ms", 100}}, 7);
  std::vector<json> seen;
  ASSERT_FALSE(c.response_to(1, &seen).is_null());
  ASSERT_FALSE(c.response_to(2, &seen).is_null());
  bool queued = false;
  for (const auto& j : seen)
    if (j.value("method", "") == "notifications/progress")
      queued = queued || j["params"]["message"].get<std::string>().find("queued for the device, 1 call ahead") != std::string::npos;
  EXPECT_TRUE(queued);
  EXPECT_EQ(c.tools.finished, 2);
}

TEST(mcp_serve, end_of_input_cancels_what_is_still_running) {
  client c;
  c.call(1, "slow", {{"ms", 20000}});
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  const auto t0 = std::chrono::steady_clock::now();
  c.close_input(); // returns once serve() has
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(5));
  EXPECT_EQ(c.tools.cancelled_seen, 1);
  EXPECT_TRUE(c.next(200).is_null()) << "no response after the client left";
}

TEST(mcp_serve, tools_list_declares_output_schemas_and_annotations_and_refuses_a_cursor) {
  client c;
  c.send({{"jsonrpc", "2.0"}, {"id", 1}, {"method", "tools/list"}});
  const auto list = c.response_to(1);
  ASSERT_EQ(list["result"]["tools"].size(), 2u);
  for (const auto& t : list["result"]["tools"]) {
    EXPECT_EQ(t["outputSchema"]["type"], "object") << t;
    EXPECT_EQ(t["annotations"]["readOnlyHint"], t["name"] == "quick") << t;
  }
  c.send({{"jsonrpc", "2.0"}, {"id", 2}, {"method", "tools/list"}, {"params", {{"cursor", "x"}}}});
  EXPECT_EQ(c.response_to(2)["error"]["code"], agent::rpc_invalid_params);
}

TEST(mcp_serve, a_runner_that_throws_is_an_error_result_and_the_server_stays_up) {
  client c;
  c.server.set_runner([](const agent::tool&, const json&, const agent::call_context&) -> agent::tool_result {
    throw std::runtime_error("cannot run 'kforge': No such file or directory");
  });
  c.call(1, "quick");
  const auto r = c.response_to(1);
  EXPECT_EQ(r["result"]["isError"], true) << r;
  EXPECT_NE(r["result"]["content"][0]["text"].get<std::string>().find("No such file"), std::string::npos);
  c.send({{"jsonrpc", "2.0"}, {"id", 2}, {"method", "ping"}});
  EXPECT_FALSE(c.response_to(2).is_null());
}
