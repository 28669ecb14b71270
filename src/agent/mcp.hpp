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
//  - ping: {}.  tools/list: every tool, no pagination.  tools/call: {content: [{type:
//    "text", text}], structuredContent, isError}; before 2025-06-18 the structured answer
//    travels as a second text block instead (those clients know no structuredContent).
//  - Errors: unparseable line -32700 (id null); not a JSON-RPC request, or a batch (MCP
//    dropped batches in 2025-06-18) -32600; unknown method -32601; tools/call without a
//    name, or naming no tool, -32602 (the spec's "unknown tool" example). Arguments that do
//    not fit a tool's inputSchema, and a tool that cannot run, are tool results with
//    isError true and a text saying what to fix (SEP-1303, 2025-11-25): the model sees them.
// Requests are answered one at a time, in order; a long evaluation holds the line.
#include "agent/tools.hpp"

#include <nlohmann/json.hpp>

#include <iosfwd>
#include <optional>
#include <string>
#include <vector>

namespace kforge::agent {

/// The revisions understood, newest first.
inline const std::vector<std::string> mcp_protocol_versions{"2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"};

/// JSON-RPC 2.0 error codes.
inline constexpr int rpc_parse_error = -32700, rpc_invalid_request = -32600, rpc_method_not_found = -32601,
                     rpc_invalid_params = -32602, rpc_internal_error = -32603;

class mcp_server {
public:
  /// The server answers with the tools of `tools`, which must outlive it.
  explicit mcp_server(const tool_registry& tools, std::string instructions = default_instructions());

  /// One incoming message (a request, a notification, or a response to us, which is
  /// ignored). @return the response to send, or nullopt when none is due. Never throws.
  [[nodiscard]] std::optional<nlohmann::json> handle(const nlohmann::json& message);
  /// One incoming line: a parse error is answered with -32700. @return the line to send
  /// (no trailing newline, never containing one), or nullopt.
  [[nodiscard]] std::optional<std::string> handle_line(const std::string& line);
  /// Reads lines from `in` until EOF and writes each response as one line to `out`,
  /// flushing after each. Blank lines are skipped.
  void serve(std::istream& in, std::ostream& out);

  [[nodiscard]] bool initialized() const { return m_initialized; }
  /// The negotiated revision ("" before initialize).
  [[nodiscard]] const std::string& protocol_version() const { return m_version; }

  /// What the server tells the model about kforge when it connects.
  [[nodiscard]] static std::string default_instructions();

private:
  nlohmann::json on_initialize(const nlohmann::json& params);
  nlohmann::json on_tools_list() const;
  nlohmann::json on_tools_call(const nlohmann::json& params);

  const tool_registry& m_tools;
  std::string m_instructions;
  bool m_initialized = false; // answered initialize
  std::string m_version;
};

} // namespace kforge::agent
