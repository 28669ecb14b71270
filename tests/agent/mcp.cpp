// The MCP server: the protocol through mcp_server::handle() with a toy tool registry
// (lifecycle, version negotiation, errors, notifications, argument checking), and a whole
// scripted agent session through the real binary (`kforge --db X mcp < requests.jsonl`)
// on the CPU problem gelu: a bad candidate fails with the check named, the fixed one
// passes, is timed and kept, and history, best, tune and export see it.
// To add a protocol case: build a server over toy_tools(), initialize(), handle() a message.
#include "agent/mcp.hpp"
#include "agent/tools.hpp"
#include "core/error.hpp"
#include "core/fs.hpp"
#include "core/subprocess.hpp"
#include "store/store.hpp"
#include "test_util.hpp"

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cstdlib>
#include <map>
#include <set>

#include <fcntl.h>
#include <poll.h>
#include <sys/wait.h>
#include <unistd.h>
#include <chrono>
#include <csignal>
#include <thread>
#include <sstream>

using namespace kforge;
using json = nlohmann::json;

namespace {

agent::tool_registry toy_tools() {
  agent::tool_registry r;
  r.add({.name = "echo",
         .title = "Echo",
         .description = "Answers with its text",
         .input_schema = {{"type", "object"},
                          {"properties", {{"text", {{"type", "string"}}}, {"times", {{"type", "integer"}, {"minimum", 1}}}}},
                          {"required", {"text"}},
                          {"additionalProperties", false}},
         .run = [](const json& a, const agent::call_context&) {
           return agent::tool_result{.structured = {{"echo", a["text"]}}, .text = a["text"].get<std::string>()};
         }});
  r.add({.name = "broken",
         .description = "Always fails the way a missing file does",
         .input_schema = {{"type", "object"}, {"properties", json::object()}},
         .run = [](const json&, const agent::call_context&) -> agent::tool_result {
           KFORGE_THROW(usage, "x.cu: candidate file not found");
         }});
  return r;
}

json request(int id, const std::string& method, json params = json::object()) {
  return {{"jsonrpc", "2.0"}, {"id", id}, {"method", method}, {"params", std::move(params)}};
}

json init_params(const std::string& version) {
  return {{"protocolVersion", version}, {"capabilities", json::object()}, {"clientInfo", {{"name", "test"}, {"version", "1"}}}};
}

json initialize(agent::mcp_server& s, const std::string& version = "2025-06-18") {
  auto r = s.handle(request(1, "initialize", init_params(version)));
  EXPECT_TRUE(r.has_value());
  EXPECT_FALSE(s.handle({{"jsonrpc", "2.0"}, {"method", "notifications/initialized"}}).has_value());
  return r ? *r : json();
}

int error_code(const std::optional<json>& r) {
  if (!r || !r->contains("error")) return 0;
  return (*r)["error"]["code"].get<int>();
}

} // namespace

TEST(mcp, initialize_answers_with_capabilities_and_server_info) {
  auto tools = toy_tools();
  agent::mcp_server s(tools);
  auto r = initialize(s);
  EXPECT_EQ(r["jsonrpc"], "2.0");
  EXPECT_EQ(r["id"], 1);
  const auto& res = r["result"];
  EXPECT_EQ(res["protocolVersion"], "2025-06-18");
  EXPECT_EQ(res["capabilities"]["tools"]["listChanged"], false);
  EXPECT_EQ(res["serverInfo"]["name"], "kforge");
  EXPECT_EQ(res["serverInfo"]["version"], KFORGE_VERSION);
  EXPECT_TRUE(res["instructions"].is_string());
  EXPECT_TRUE(s.initialized());
}

TEST(mcp, version_negotiation_keeps_a_supported_version_else_offers_the_latest) {
  auto tools = toy_tools();
  for (std::string v : {"2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25"}) {
    agent::mcp_server s(tools);
    EXPECT_EQ(initialize(s, v)["result"]["protocolVersion"], v);
  }
  agent::mcp_server s(tools);
  EXPECT_EQ(initialize(s, "1999-01-01")["result"]["protocolVersion"], agent::mcp_protocol_versions.front());
  agent::mcp_server bad(tools);
  EXPECT_EQ(error_code(bad.handle(request(1, "initialize", {{"capabilities", json::object()}}))), agent::rpc_invalid_params);
}

TEST(mcp, notifications_get_no_response) {
  auto tools = toy_tools();
  agent::mcp_server s(tools);
  initialize(s);
  EXPECT_FALSE(s.handle({{"jsonrpc", "2.0"}, {"method", "notifications/cancelled"}, {"params", {{"requestId", 3}}}}));
  EXPECT_FALSE(s.handle({{"jsonrpc", "2.0"}, {"method", "no/such/notification"}}));
  // a response to a request of ours (we send none) is dropped too
  EXPECT_FALSE(s.handle({{"jsonrpc", "2.0"}, {"id", 9}, {"result", json::object()}}));
}

TEST(mcp, requests_before_initialize_are_refused_but_ping_is_answered) {
  auto tools = toy_tools();
  agent::mcp_server s(tools);
  EXPECT_EQ(error_code(s.handle(request(5, "tools/list"))), agent::rpc_invalid_request);
  auto pong = s.handle(request(6, "ping"));
  ASSERT_TRUE(pong);
  EXPECT_EQ((*pong)["result"], json::object());
  EXPECT_EQ((*pong)["id"], 6);
}

TEST(mcp, tools_list_has_every_tool_with_an_object_input_schema) {
  const auto tools = agent::make_kforge_tools("unused.db");
  agent::mcp_server s(tools);
  initialize(s);
  auto r = s.handle(request(2, "tools/list"));
  ASSERT_TRUE(r);
  std::set<std::string> names;
  for (const auto& t : (*r)["result"]["tools"]) {
    names.insert(t["name"].get<std::string>());
    EXPECT_EQ(t["inputSchema"]["type"], "object") << t["name"];
    EXPECT_TRUE(t["inputSchema"]["properties"].is_object()) << t["name"];
    EXPECT_FALSE(t["description"].get<std::string>().empty()) << t["name"];
    EXPECT_TRUE(t["title"].is_string()) << t["name"];
  }
  EXPECT_EQ(names, (std::set<std::string>{"describe_problem", "evaluate", "profile", "tune", "history", "best", "export", "report"}));
}

TEST(mcp, unknown_method_is_32601_and_string_ids_are_echoed) {
  auto tools = toy_tools();
  agent::mcp_server s(tools);
  initialize(s);
  auto r = s.handle({{"jsonrpc", "2.0"}, {"id", "abc"}, {"method", "resources/list"}});
  EXPECT_EQ(error_code(r), agent::rpc_method_not_found);
  EXPECT_EQ((*r)["id"], "abc");
}

TEST(mcp, malformed_messages_are_invalid_requests) {
  auto tools = toy_tools();
  agent::mcp_server s(tools);
  initialize(s);
  EXPECT_EQ(error_code(s.handle({{"id", 3}, {"method", "ping"}})), agent::rpc_invalid_request); // no "jsonrpc"
  EXPECT_EQ(error_code(s.handle(json::array({request(3, "ping")}))), agent::rpc_invalid_request); // a batch
  EXPECT_EQ(error_code(s.handle({{"jsonrpc", "2.0"}, {"id", 3}, {"method", 7}})), agent::rpc_invalid_request);
  EXPECT_EQ(error_code(s.handle({{"jsonrpc", "2.0"}, {"id", json::array()}, {"method", "ping"}})), agent::rpc_invalid_request);
}

// Unknown tool: a JSON-RPC error -32602, as the MCP spec's tools/call error example shows
// (2025-06-18 and 2025-11-25). Arguments that do not fit the schema, and a tool that cannot
// run, are results with isError, which the model sees (SEP-1303).
TEST(mcp, tools_call_unknown_tool_is_32602_and_tool_failures_are_is_error_results) {
  auto tools = toy_tools();
  agent::mcp_server s(tools);
  initialize(s);
  auto unknown = s.handle(request(3, "tools/call", {{"name", "nope"}, {"arguments", json::object()}}));
  EXPECT_EQ(error_code(unknown), agent::rpc_invalid_params);
  EXPECT_NE((*unknown)["error"]["message"].get<std::string>().find("echo"), std::string::npos); // lists the tools
  EXPECT_EQ(error_code(s.handle(request(4, "tools/call", {{"arguments", json::object()}}))), agent::rpc_invalid_params);

  auto ok = s.handle(request(5, "tools/call", {{"name", "echo"}, {"arguments", {{"text", "hi"}}}}));
  ASSERT_TRUE(ok);
  EXPECT_EQ((*ok)["result"]["isError"], false);
  EXPECT_EQ((*ok)["result"]["content"][0]["type"], "text");
  EXPECT_EQ((*ok)["result"]["content"][0]["text"], "hi");
  EXPECT_EQ((*ok)["result"]["structuredContent"]["echo"], "hi");

  for (const json& args : {json::object(), json{{"text", 3}}, json{{"text", "a"}, {"extra", 1}}, json{{"text", "a"}, {"times", 0}}}) {
    auto bad = s.handle(request(6, "tools/call", {{"name", "echo"}, {"arguments", args}}));
    ASSERT_TRUE(bad);
    EXPECT_EQ((*bad)["result"]["isError"], true) << args;
    EXPECT_FALSE((*bad)["result"]["content"][0]["text"].get<std::string>().empty());
  }
  auto broken = s.handle(request(7, "tools/call", {{"name", "broken"}}));
  ASSERT_TRUE(broken);
  EXPECT_EQ((*broken)["result"]["isError"], true);
  EXPECT_NE((*broken)["result"]["content"][0]["text"].get<std::string>().find("candidate file not found"), std::string::npos);
}

TEST(mcp, before_2025_06_18_the_structured_answer_is_a_second_text_block) {
  auto tools = toy_tools();
  agent::mcp_server s(tools);
  initialize(s, "2024-11-05");
  auto r = s.handle(request(2, "tools/call", {{"name", "echo"}, {"arguments", {{"text", "hi"}}}}));
  ASSERT_TRUE(r);
  EXPECT_FALSE((*r)["result"].contains("structuredContent"));
  ASSERT_EQ((*r)["result"]["content"].size(), 2u);
  EXPECT_EQ(json::parse((*r)["result"]["content"][1]["text"].get<std::string>())["echo"], "hi");
}

TEST(mcp, serve_answers_a_bad_line_with_32700_and_writes_one_line_per_response) {
  auto tools = toy_tools();
  agent::mcp_server s(tools);
  std::istringstream in(request(1, "initialize", init_params("2025-06-18")).dump() + "\n" +
                        R"({"jsonrpc":"2.0","method":"notifications/initialized"})" + "\n" + "{not json\n\n" +
                        request(2, "ping").dump() + "\r\n");
  std::ostringstream out;
  s.serve(in, out);
  std::vector<json> lines;
  std::istringstream back(out.str());
  for (std::string l; std::getline(back, l);) lines.push_back(json::parse(l));
  ASSERT_EQ(lines.size(), 3u) << out.str();
  EXPECT_EQ(lines[0]["id"], 1);
  EXPECT_EQ(lines[1]["error"]["code"], agent::rpc_parse_error);
  EXPECT_TRUE(lines[1]["id"].is_null());
  EXPECT_EQ(lines[2]["id"], 2);
  // A text with a newline still travels as one line.
  const auto echoed = s.handle_line(request(3, "tools/call", {{"name", "echo"}, {"arguments", {{"text", "two\nlines"}}}}).dump());
  ASSERT_TRUE(echoed);
  EXPECT_EQ(echoed->find('\n'), std::string::npos);
  EXPECT_EQ(json::parse(*echoed)["result"]["content"][0]["text"], "two\nlines");
}

TEST(mcp_tools, check_arguments_names_the_argument) {
  const json schema{{"type", "object"},
                    {"properties", {{"run", {{"type", {"integer", "string"}}}}, {"method", {{"enum", {"grid", "auto"}}}}}},
                    {"required", {"run"}},
                    {"additionalProperties", false}};
  EXPECT_EQ(agent::check_arguments(schema, {{"run", 3}}), "");
  EXPECT_EQ(agent::check_arguments(schema, {{"run", "r3"}, {"method", "grid"}}), "");
  EXPECT_NE(agent::check_arguments(schema, json::object()).find("'run' is required"), std::string::npos);
  EXPECT_NE(agent::check_arguments(schema, {{"run", true}}).find("'run' must be integer or string"), std::string::npos);
  EXPECT_NE(agent::check_arguments(schema, {{"run", 1}, {"method", "x"}}).find("one of"), std::string::npos);
  EXPECT_NE(agent::check_arguments(schema, {{"run", 1}, {"x", 1}}).find("unknown argument 'x'"), std::string::npos);
}

TEST(mcp_tools, a_missing_problem_or_candidate_is_an_is_error_result_saying_what_to_give) {
  test::temp_dir d;
  const auto tools = agent::make_kforge_tools(d / "k.db");
  const auto gelu = (test::problems_dir() / "gelu").string();
  auto r = agent::call_tool(*tools.find("describe_problem"), {{"problem", (d / "nope").string()}});
  EXPECT_TRUE(r.is_error);
  EXPECT_NE(r.text.find("problem.toml"), std::string::npos) << r.text;
  r = agent::call_tool(*tools.find("evaluate"), {{"problem", gelu}, {"path", (d / "missing.cpp").string()}});
  EXPECT_TRUE(r.is_error);
  EXPECT_NE(r.text.find("not found"), std::string::npos) << r.text;
  r = agent::call_tool(*tools.find("evaluate"), {{"problem", gelu}});
  EXPECT_TRUE(r.is_error);
  EXPECT_NE(r.text.find("exactly one of"), std::string::npos) << r.text;
  r = agent::call_tool(*tools.find("history"), json::object());
  EXPECT_TRUE(r.is_error); // no database yet
  EXPECT_FALSE(std::filesystem::exists(d / "k.db"));
}

// --- a whole agent session through the binary --------------------------------------------

namespace {

const char* zeros_candidate = R"(// writes zeros: must fail verification
#include <kforge/kernel.h>
#include <cstdint>
KF_EXPORT int kf_forward(const kf_args* a) {
  const kf_tensor& yt = a->outputs[0];
  int64_t n = 1;
  for (int d = 0; d < yt.ndim; ++d) n *= yt.shape[d];
  float* y = static_cast<float*>(yt.data);
  for (int64_t i = 0; i < n; ++i) y[i] = 0.0f;
  return 0;
}
)";

json with(json a, const json& b) {
  a.update(b);
  return a;
}

json call(int id, const std::string& tool, json args) {
  return request(id, "tools/call", {{"name", tool}, {"arguments", std::move(args)}});
}

/// An agent's session with `kforge --db DB mcp` started in `dir`: each request is sent once the
/// previous one's response has arrived (as an agent waits for a result before it acts on it);
/// stdin stays open until the last response, then closes. @return every line the server wrote.
std::vector<json> converse(const std::filesystem::path& dir, const std::filesystem::path& db, const std::vector<json>& script) {
  int in[2], out[2];
  EXPECT_EQ(::pipe2(in, O_CLOEXEC), 0);
  EXPECT_EQ(::pipe2(out, O_CLOEXEC), 0);
  const std::string cmd = fmt::format("cd '{}' && exec '{}' --db '{}' mcp 2>> stderr.txt", dir.string(),
                                      test::kforge_binary().string(), db.string());
  const pid_t pid = spawn_in_own_group({"sh", "-c", cmd}, {{in[0], 0}, {out[1], 1}});
  ::close(in[0]);
  ::close(out[1]);
  std::vector<json> lines;
  std::string pending;
  auto read_until = [&](const json& id) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(240);
    for (;;) {
      for (std::size_t nl; (nl = pending.find('\n')) != std::string::npos;) {
        auto j = json::parse(pending.substr(0, nl), nullptr, false);
        pending.erase(0, nl + 1);
        EXPECT_FALSE(j.is_discarded()) << "stdout must hold JSON-RPC lines only";
        lines.push_back(j);
        if (j.is_object() && j.contains("id") && j["id"] == id) return;
      }
      pollfd p{out[0], POLLIN, 0};
      if (std::chrono::steady_clock::now() > deadline || ::poll(&p, 1, 1000) < 0) return;
      char buf[65536];
      if (p.revents == 0) continue;
      const auto n = ::read(out[0], buf, sizeof buf);
      if (n <= 0) return;
      pending.append(buf, static_cast<std::size_t>(n));
    }
  };
  for (const auto& m : script) {
    const auto line = m.dump() + "\n";
    EXPECT_EQ(::write(in[1], line.data(), line.size()), static_cast<ssize_t>(line.size()));
    if (m.contains("id")) read_until(m["id"]);
  }
  ::close(in[1]);
  read_until(json("no such id")); // to its end
  ::close(out[0]);
  int status = 0;
  ::waitpid(pid, &status, 0);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
  return lines;
}

} // namespace

TEST(mcp_session, scripted_agent_session_through_the_binary) {
  test::temp_dir d;
  test::cache_env cache;
  ::setenv("KFORGE_WORKER", test::worker_binary().c_str(), 1);
  const auto gelu = (test::problems_dir() / "gelu").string();
  const auto seed_source = read_file(test::problems_dir() / "gelu" / "seed.cpp");
  const json quick{{"trials", 1}, {"time_budget_s", 0.2}};

  std::vector<json> script = {
      request(1, "initialize", init_params("2025-06-18")),
      {{"jsonrpc", "2.0"}, {"method", "notifications/initialized"}},
      request(2, "tools/list"),
      call(3, "describe_problem", {{"problem", gelu}}),
      call(4, "evaluate", with({{"problem", gelu}, {"source", zeros_candidate}, {"hypothesis", "zeros (a wrong kernel)"}}, quick)),
      call(5, "evaluate", with({{"problem", gelu}, {"source", seed_source}, {"hypothesis", "the seed, rows over threads"},
                                {"predicted_ms", 5.0}}, quick)),
      call(6, "history", {{"problem", gelu}}),
      call(7, "best", {{"problem", gelu}}),
      call(8, "tune", with({{"problem", gelu}, {"source", seed_source}, {"budget", 2}, {"method", "grid"}}, quick)),
  };
  const auto db = d / "k.db";
  std::map<int, json> by_id;
  int count = 0;
  for (const auto& j : converse(d.path, db, script)) {
    EXPECT_EQ(j["jsonrpc"], "2.0");
    if (!j.contains("id")) continue; // notifications (no progress token was sent: none expected)
    by_id[j["id"].get<int>()] = j;
    ++count;
  }
  EXPECT_EQ(count, 8) << "one response per request, none for the notification";
  const auto stderr_text = read_file(d / "stderr.txt");
  for (int id = 1; id <= 8; ++id) ASSERT_TRUE(by_id.count(id) && by_id[id].contains("result")) << id << "\n" << stderr_text;

  EXPECT_EQ(by_id[1]["result"]["protocolVersion"], "2025-06-18");
  EXPECT_EQ(by_id[2]["result"]["tools"].size(), 8u);
  const auto& described = by_id[3]["result"];
  EXPECT_EQ(described["structuredContent"]["name"], "gelu");
  EXPECT_EQ(described["structuredContent"]["backend"], "cpu");
  EXPECT_NE(described["content"][0]["text"].get<std::string>().find("kf_forward"), std::string::npos);

  // the bad candidate: a normal result (not isError) that names the failing check
  const auto& bad = by_id[4]["result"];
  EXPECT_EQ(bad["isError"], false) << bad;
  const auto bad_status = bad["structuredContent"]["status"].get<std::string>();
  EXPECT_EQ(bad_status, "tolerance") << bad["content"][0]["text"];
  EXPECT_EQ(bad["structuredContent"]["kept"], false);
  const auto bad_text = bad["content"][0]["text"].get<std::string>();
  EXPECT_NE(bad_text.find("FAILED: " + bad_status), std::string::npos) << bad_text;
  EXPECT_NE(bad_text.find(bad["structuredContent"]["message"].get<std::string>()), std::string::npos) << bad_text;
  EXPECT_NE(bad_text.find("kept: no"), std::string::npos) << bad_text;

  // the fixed one: passed, timed, kept, with its hypothesis and prediction on record
  const auto& good = by_id[5]["result"];
  EXPECT_EQ(good["isError"], false);
  const auto& gj = good["structuredContent"];
  EXPECT_EQ(gj["schema"], "kforge.eval/1");
  EXPECT_EQ(gj["status"], "passed") << good["content"][0]["text"];
  EXPECT_GT(gj["timing"]["candidate"]["median_s"].get<double>(), 0);
  EXPECT_EQ(gj["kept"], true);
  EXPECT_EQ(gj["hypothesis"], "the seed, rows over threads");
  EXPECT_DOUBLE_EQ(gj["predicted_s"].get<double>(), 0.005);
  const auto good_text = good["content"][0]["text"].get<std::string>();
  EXPECT_NE(good_text.find("PASSED"), std::string::npos) << good_text;
  EXPECT_NE(good_text.find("speedup"), std::string::npos) << good_text;
  EXPECT_NE(good_text.find("kept: yes"), std::string::npos) << good_text;
  const auto good_eval = gj["evaluation_id"].get<int64_t>();

  // history: both, oldest first, the second kept
  const auto& rows = by_id[6]["result"]["structuredContent"]["rows"];
  ASSERT_EQ(rows.size(), 2u) << by_id[6];
  EXPECT_EQ(rows[0]["status"], bad_status);
  EXPECT_EQ(rows[0]["kept"], false);
  EXPECT_EQ(rows[0]["hypothesis"], "zeros (a wrong kernel)");
  EXPECT_EQ(rows[1]["evaluation_id"], good_eval);
  EXPECT_EQ(rows[1]["kept"], true);
  EXPECT_NE(by_id[6]["result"]["content"][0]["text"].get<std::string>().find("the seed, rows over threads"), std::string::npos);

  // best: the passing one, with its source
  const auto& best = by_id[7]["result"]["structuredContent"]["best"];
  EXPECT_EQ(best["evaluation_id"], good_eval);
  EXPECT_NE(best["source"].get<std::string>().find("kf_forward"), std::string::npos);

  // tune: a run over the seed's CHUNK parameter, within its budget of 2
  const auto& tuned = by_id[8]["result"];
  EXPECT_EQ(tuned["isError"], false) << tuned;
  const auto& tj = tuned["structuredContent"];
  EXPECT_TRUE(tj["declares_params"].get<bool>());
  EXPECT_LE(tj["evaluations"].get<int>(), 2);
  ASSERT_TRUE(tj["best"].is_object()) << tuned["content"][0]["text"];
  EXPECT_EQ(tj["best"]["status"], "passed");
  EXPECT_EQ(tj["best"]["source"].get<std::string>().find("kforge: param"), std::string::npos); // an instance

  // and the run's best can be exported in a second session
  const int64_t run = tj["run_id"].get<int64_t>();
  const auto r2 = converse(d.path, db,
                           {request(1, "initialize", init_params("2025-03-26")),
                            call(2, "export", {{"run", run}, {"dir", (d / "out").string()}}),
                            call(3, "export", {{"run", 999}}),
                            call(4, "report", {{"run", run}, {"path", (d / "run.html").string()}}),
                            call(5, "report", {{"problem", "gelu"}})});
  ASSERT_EQ(r2.size(), 5u);
  EXPECT_EQ(r2[1]["result"]["isError"], false) << r2[1];
  EXPECT_FALSE(r2[1]["result"].contains("structuredContent")); // 2025-03-26: text blocks only
  const auto exported = json::parse(r2[1]["result"]["content"][1]["text"].get<std::string>());
  ASSERT_FALSE(exported["files"].empty());
  for (const auto& f : exported["files"]) EXPECT_TRUE(std::filesystem::exists(f.get<std::string>())) << f;
  EXPECT_EQ(r2[2]["result"]["isError"], true); // no run 999: the tool says so
  EXPECT_NE(r2[2]["result"]["content"][0]["text"].get<std::string>().find("999"), std::string::npos);

  // report: the page's path and the key numbers (text blocks in 2025-03-26: the second is the JSON)
  ASSERT_EQ(r2[3]["result"]["isError"], false) << r2[3];
  const auto rep = json::parse(r2[3]["result"]["content"][1]["text"].get<std::string>());
  EXPECT_EQ(rep["path"], (d / "run.html").string());
  EXPECT_EQ(rep["kind"], "run");
  EXPECT_EQ(rep["summary"]["evaluations"], tj["evaluations"]);
  EXPECT_GT(std::filesystem::file_size(d / "run.html"), 100'000u) << "the chart libraries are inlined";
  ASSERT_EQ(r2[4]["result"]["isError"], false) << r2[4];
  const auto per_problem = json::parse(r2[4]["result"]["content"][1]["text"].get<std::string>());
  EXPECT_EQ(per_problem["path"], (d / "report-gelu.html").string()) << "relative to the server's folder";
  // the two evaluate calls and the tune's new instances (its first, the seed itself, was judged already)
  EXPECT_GE(per_problem["summary"]["evaluations"].get<int>(), 3);
  EXPECT_LE(per_problem["summary"]["evaluations"].get<int>(), 2 + tj["evaluations"].get<int>());
}

TEST(mcp_session, sigterm_mid_evaluation_cancels_it_records_it_and_exits) {
  test::temp_dir d;
  test::cache_env cache;
  ::setenv("KFORGE_WORKER", test::worker_binary().c_str(), 1);
  const auto gelu = (test::problems_dir() / "gelu").string();
  const auto db = d / "k.db";
  int in[2], out[2];
  ASSERT_EQ(::pipe2(in, O_CLOEXEC), 0);
  ASSERT_EQ(::pipe2(out, O_CLOEXEC), 0);
  const pid_t pid = spawn_in_own_group({"sh", "-c", fmt::format("cd '{}' && exec '{}' --db '{}' mcp 2>> stderr.txt", d.path.string(),
                                                                test::kforge_binary().string(), db.string())},
                                       {{in[0], 0}, {out[1], 1}});
  ::close(in[0]);
  ::close(out[1]);
  const std::string lines = request(1, "initialize", init_params("2025-06-18")).dump() + "\n" +
                            call(2, "evaluate", {{"problem", gelu}, {"path", gelu + "/seed.cpp"}, {"time_budget_s", 60.0}}).dump() + "\n";
  ASSERT_EQ(::write(in[1], lines.data(), lines.size()), static_cast<ssize_t>(lines.size()));
  // Until the evaluation is on record as running.
  bool running = false;
  for (int i = 0; i < 150 && !running; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    if (!std::filesystem::exists(db)) continue;
    store::store s(db);
    const auto rows = s.list_evaluations();
    running = !rows.empty() && rows.front().status == "running";
  }
  ASSERT_TRUE(running) << read_file(d / "stderr.txt");
  ::kill(pid, SIGTERM); // stdin still open: the signal alone ends it
  int status = 0;
  ::waitpid(pid, &status, 0);
  ::close(in[1]);
  ::close(out[0]);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 128 + SIGTERM) << status;
  store::store s(db);
  const auto rows = s.list_evaluations();
  ASSERT_FALSE(rows.empty());
  EXPECT_EQ(rows.front().status, "cancelled");
  const auto ev = s.get_evaluation(rows.front().id);
  EXPECT_NE(ev->message.find("kforge mcp got"), std::string::npos) << ev->message;
}

TEST(mcp_session, a_piped_script_with_in_order_gets_every_answer_in_order) {
  test::temp_dir d;
  test::cache_env cache;
  ::setenv("KFORGE_WORKER", test::worker_binary().c_str(), 1);
  const auto gelu = (test::problems_dir() / "gelu").string();
  std::string requests = request(1, "initialize", init_params("2025-06-18")).dump() + "\n" +
                         call(2, "evaluate", {{"problem", gelu}, {"path", gelu + "/seed.cpp"}, {"trials", 1},
                                              {"time_budget_s", 0.2}}).dump() + "\n" +
                         call(3, "history", {{"problem", gelu}}).dump() + "\n";
  write_file_atomic(d / "requests.jsonl", requests);
  auto rc = run_command({"sh", "-c", fmt::format("cd '{}' && '{}' --db k.db mcp --in-order < requests.jsonl > out.jsonl 2> err.txt",
                                                 d.path.string(), test::kforge_binary().string())},
                        300);
  ASSERT_EQ(rc.exit_code, 0) << read_file(d / "err.txt");
  std::vector<json> lines;
  std::istringstream in(read_file(d / "out.jsonl"));
  for (std::string l; std::getline(in, l);) lines.push_back(json::parse(l));
  ASSERT_EQ(lines.size(), 3u) << "end of input finished the evaluation rather than cancelling it";
  EXPECT_EQ(lines[1]["id"], 2);
  EXPECT_EQ(lines[1]["result"]["structuredContent"]["status"], "passed");
  EXPECT_EQ(lines[2]["id"], 3);
  EXPECT_EQ(lines[2]["result"]["structuredContent"]["rows"].size(), 1u) << "history ran after the evaluation";
}
