#pragma once
// A Model Context Protocol server for kforge's tools (agent/tools.hpp), so that a coding
// agent (Claude Code, Cursor, Codex) can drive the verifier, timer, profiler and
// experiment log. JSON-RPC 2.0; the stdio transport is one JSON message per line.
//   auto tools = agent::make_kforge_tools(db_path);
//   agent::mcp_server server(tools);
//   server.serve(std::cin, std::cout);           // until EOF; logs go to std::cerr only
//   auto reply = server.handle(json::parse(line)); // the same, one message at a time
// What it speaks (MCP revisions 2025-11-25, 2025-06-18, 2025-03-26, 2024-11-05):
//  - initialize: answers with the client's protocolVersion when supported, else the latest
//    here; capabilities {tools: {listChanged: false}}; serverInfo {name: "kforge", version}.
//    Every request but initialize and ping before it gets error -32600 ("initialize first").
//  - notifications/initialized, notifications/cancelled and any other notification: no answer.
//  - ping: {}.  tools/list: every tool with its outputSchema and annotations (readOnlyHint
//    for the tools that only read the record), in one page (a cursor is -32602).
//  - tools/call: {content: [{type: "text", text: summary}, {type: "text", text: the JSON}],
//    structuredContent, isError}; before 2025-06-18 only the two text blocks (those clients
//    know no structuredContent). A failed call carries no structuredContent.
//  - Errors: unparseable line -32700 (id null); not a JSON-RPC request, or a batch (MCP
//    dropped batches in 2025-06-18) -32600; unknown method -32601; tools/call without a
//    name, or naming no tool, -32602 (the spec's "unknown tool" example). Arguments that do
//    not fit a tool's inputSchema, and a tool that cannot run, are tool results with
//    isError true and a text saying what to fix (SEP-1303, 2025-11-25): the model sees them.
// serve() reads while tools run: each tools/call runs on a thread of its own, so ping and
// the read-only tools are answered at once; the tools that run kernels (tool::uses_device)
// queue for the device one at a time, saying their place. With a progressToken a call gets
// notifications/progress when its phase changes and at least every second.
// notifications/cancelled ends the call (its runner is told; kforge mcp kills its process and
// records it "cancelled") and no response is sent; at end of input every call still running
// is cancelled the same way and waited for.
#include "agent/tools.hpp"

#include <nlohmann/json.hpp>

#include <atomic>
#include <condition_variable>
#include <deque>
#include <functional>
#include <iosfwd>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <utility>
#include <string>
#include <vector>

namespace kforge::agent {

/// The revisions understood, newest first.
inline const std::vector<std::string> mcp_protocol_versions{"2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"};

/// JSON-RPC 2.0 error codes.
inline constexpr int rpc_parse_error = -32700, rpc_invalid_request = -32600, rpc_method_not_found = -32601,
                     rpc_invalid_params = -32602, rpc_internal_error = -32603;

/// How a tools/call runs. The default calls the tool in this process (call_tool), where
/// cancelling is the tool's to notice (call_context::is_cancelled); kforge mcp runs each
/// call in a child process it can kill instead (cli/cmd_mcp.cpp).
using call_runner = std::function<tool_result(const tool&, const nlohmann::json& args, const call_context&)>;

class mcp_server {
public:
  /// The server answers with the tools of `tools`, which must outlive it.
  explicit mcp_server(const tool_registry& tools, std::string instructions = default_instructions());
  ~mcp_server();
  mcp_server(const mcp_server&) = delete;
  mcp_server& operator=(const mcp_server&) = delete;

  void set_runner(call_runner runner) { m_runner = std::move(runner); }

  /// One incoming message (a request, a notification, or a response to us, which is
  /// ignored). @return the response to send, or nullopt when none is due. Never throws.
  [[nodiscard]] std::optional<nlohmann::json> handle(const nlohmann::json& message);
  /// One incoming line: a parse error is answered with -32700. @return the line to send
  /// (no trailing newline, never containing one), or nullopt.
  [[nodiscard]] std::optional<std::string> handle_line(const std::string& line);
  /// Reads lines from `in` until EOF and writes each response (and notification) as one
  /// line to `out`, flushing after each; tools/call runs concurrently (above). Blank lines
  /// are skipped. Returns once every call has ended.
  void serve(std::istream& in, std::ostream& out);
  /// For piped scripts (kforge mcp --in-order), not agents: each request is answered before
  /// the next line is read, with no progress notifications, and end of input ends nothing.
  void serve_in_order(std::istream& in, std::ostream& out);
  /// Cancels every call in flight with `reason` and waits for them to end (a signal
  /// handler's thread calls this before kforge mcp exits).
  void cancel_all(const std::string& reason);

  [[nodiscard]] bool initialized() const { return m_initialized; }
  /// The negotiated revision ("" before initialize).
  [[nodiscard]] const std::string& protocol_version() const { return m_version; }

  /// What the server tells the model about kforge when it connects.
  [[nodiscard]] static std::string default_instructions();

private:
  struct call; // a tools/call in flight (serve)

  nlohmann::json on_initialize(const nlohmann::json& params);
  nlohmann::json on_tools_list(const nlohmann::json& params) const;
  /// The tool and its arguments of a tools/call, checked; throws the JSON-RPC error.
  std::pair<const tool*, nlohmann::json> call_target(const nlohmann::json& params) const;
  nlohmann::json call_result(const tool_result& r) const;
  /// serve(): a tools/call started on its own thread; nullopt, or an error response now.
  std::optional<nlohmann::json> start_call(const nlohmann::json& id, const nlohmann::json& params);
  void run_call(const std::shared_ptr<call>& c);
  void cancel(const nlohmann::json& request_id, const std::string& reason);
  std::optional<nlohmann::json> progress_note(call& c, const std::string& message);
  void send_for(call& c, const std::optional<nlohmann::json>& message, bool last);
  void ticker();
  void reap(bool all);

  const tool_registry& m_tools;
  std::string m_instructions;
  std::atomic<bool> m_initialized = false; // answered initialize
  std::string m_version;
  call_runner m_runner;

  // serve()'s state
  std::ostream* m_out = nullptr;
  std::mutex m_out_mutex; // one line at a time
  std::mutex m_mutex;     // the calls, the device queue
  std::condition_variable m_changed;
  std::map<std::string, std::shared_ptr<call>> m_calls; // by id.dump()
  std::deque<call*> m_device_queue;                     // uses_device calls, the running one first
  bool m_stopping = false;
};

} // namespace kforge::agent
