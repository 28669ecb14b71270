#include "agent/mcp.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <iostream>

namespace kforge::agent {

namespace {

using json = nlohmann::json;

/// A JSON-RPC error raised by a method handler.
struct rpc_error {
  int code;
  std::string message;
  json data = nullptr;
};

json error_response(const json& id, int code, const std::string& message, const json& data = nullptr) {
  json e{{"code", code}, {"message", message}};
  if (!data.is_null()) e["data"] = data;
  return {{"jsonrpc", "2.0"}, {"id", id}, {"error", e}};
}

json result_response(const json& id, json result) {
  return {{"jsonrpc", "2.0"}, {"id", id}, {"result", std::move(result)}};
}

bool valid_id(const json& id) { return id.is_string() || id.is_number_integer() || id.is_number_unsigned(); }

// structuredContent and tool titles came with 2025-06-18; older clients get neither.
bool knows_structured_content(const std::string& version) { return version >= "2025-06-18"; }

} // namespace

mcp_server::mcp_server(const tool_registry& tools, std::string instructions)
    : m_tools(tools), m_instructions(std::move(instructions)) {}

std::string mcp_server::default_instructions() {
  return "kforge verifies and times GPU/CPU kernel candidates against a problem's reference and a float64 oracle, "
         "and keeps every experiment in a database. A problem is a directory holding problem.toml (e.g. "
         "problems/cpu/gelu). Start with describe_problem; write a candidate and call evaluate with its source or "
         "path, saying what it tests (hypothesis) and the time you expect (predicted_ms); a failing candidate comes "
         "back with the check that failed and the worst element, so fix that and evaluate again. Use profile to see "
         "why a CUDA candidate is slow, tune when the source declares `// kforge: param` lines, history and best to "
         "see what was tried and what is fastest, and export to write a run's best candidate out.";
}

json mcp_server::on_initialize(const json& params) {
  if (!params.is_object()) throw rpc_error{rpc_invalid_params, "initialize: params must be an object"};
  const auto asked = params.value("protocolVersion", json());
  if (!asked.is_string())
    throw rpc_error{rpc_invalid_params, "initialize: params.protocolVersion must be a string such as \"2025-06-18\""};
  const auto v = asked.get<std::string>();
  const bool supported = std::find(mcp_protocol_versions.begin(), mcp_protocol_versions.end(), v) != mcp_protocol_versions.end();
  m_version = supported ? v : mcp_protocol_versions.front();
  m_initialized = true;
  std::string client = "an unnamed client";
  if (auto ci = params.value("clientInfo", json()); ci.is_object())
    client = ci.value("name", std::string("?")) + " " + ci.value("version", std::string());
  std::cerr << fmt::format("kforge mcp: initialized by {} (protocol {}{})\n", client, m_version,
                           supported ? "" : fmt::format(", asked for {}", v));
  json r{{"protocolVersion", m_version},
         {"capabilities", {{"tools", {{"listChanged", false}}}}},
         {"serverInfo", {{"name", "kforge"}, {"version", KFORGE_VERSION}}}};
  if (knows_structured_content(m_version)) r["serverInfo"]["title"] = "kforge: kernel verifier and search";
  if (!m_instructions.empty()) r["instructions"] = m_instructions;
  return r;
}

json mcp_server::on_tools_list() const {
  json list = json::array();
  for (const auto& t : m_tools.all()) {
    json j{{"name", t.name}, {"description", t.description}, {"inputSchema", t.input_schema}};
    if (!t.title.empty() && knows_structured_content(m_version)) j["title"] = t.title;
    list.push_back(std::move(j));
  }
  return {{"tools", list}};
}

json mcp_server::on_tools_call(const json& params) {
  if (!params.is_object() || !params.contains("name") || !params["name"].is_string())
    throw rpc_error{rpc_invalid_params, "tools/call: params.name must name a tool (tools/list lists them)"};
  const auto name = params["name"].get<std::string>();
  const tool* t = m_tools.find(name);
  if (!t) {
    std::string known;
    for (const auto& k : m_tools.all()) known += (known.empty() ? "" : ", ") + k.name;
    throw rpc_error{rpc_invalid_params, fmt::format("unknown tool '{}'; the tools are: {}", name, known)};
  }
  json args = params.value("arguments", json::object());
  if (args.is_null()) args = json::object();
  if (!args.is_object()) throw rpc_error{rpc_invalid_params, "tools/call: params.arguments must be an object"};

  std::cerr << fmt::format("kforge mcp: {} {}\n", name, args.dump().substr(0, 200));
  const tool_result r = call_tool(*t, args);
  json content = json::array({{{"type", "text"}, {"text", r.text}}});
  json out{{"content", content}, {"isError", r.is_error}};
  if (knows_structured_content(m_version)) {
    out["structuredContent"] = r.structured.is_object() ? r.structured : json{{"value", r.structured}};
  } else if (!r.structured.empty()) {
    out["content"].push_back({{"type", "text"}, {"text", r.structured.dump()}});
  }
  return out;
}

std::optional<json> mcp_server::handle(const json& msg) {
  if (msg.is_array()) return error_response(nullptr, rpc_invalid_request, "batches are not supported; send one message per line");
  if (!msg.is_object() || msg.value("jsonrpc", json()) != "2.0")
    return error_response(msg.is_object() && msg.contains("id") && valid_id(msg["id"]) ? msg["id"] : json(),
                          rpc_invalid_request, "not a JSON-RPC 2.0 message: expected an object with \"jsonrpc\": \"2.0\"");
  const bool has_id = msg.contains("id");
  if (!msg.contains("method")) return std::nullopt; // a response to a request of ours: we send none
  const json id = has_id ? msg["id"] : json();
  if (!msg["method"].is_string())
    return has_id ? std::optional<json>(error_response(valid_id(id) ? id : json(), rpc_invalid_request, "method must be a string"))
                  : std::nullopt;
  const auto method = msg["method"].get<std::string>();
  const json params = msg.value("params", json::object());

  if (!has_id) { // a notification: never answered
    if (method == "notifications/initialized" && !m_initialized)
      std::cerr << "kforge mcp: notifications/initialized before initialize; ignored\n";
    return std::nullopt;
  }
  if (!valid_id(id)) return error_response(nullptr, rpc_invalid_request, "id must be a string or an integer");

  try {
    if (method == "initialize") return result_response(id, on_initialize(params));
    if (method == "ping") return result_response(id, json::object());
    if (!m_initialized)
      return error_response(id, rpc_invalid_request,
                            fmt::format("'{}' before initialize: send initialize first (MCP lifecycle)", method));
    if (method == "tools/list") return result_response(id, on_tools_list());
    if (method == "tools/call") return result_response(id, on_tools_call(params));
    return error_response(id, rpc_method_not_found,
                          fmt::format("method '{}' not found; kforge serves initialize, ping, tools/list and tools/call", method));
  } catch (const rpc_error& e) {
    return error_response(id, e.code, e.message, e.data);
  } catch (const std::exception& e) {
    return error_response(id, rpc_internal_error, fmt::format("internal error: {}", e.what()));
  }
}

std::optional<std::string> mcp_server::handle_line(const std::string& line) {
  json msg = json::parse(line, nullptr, /*allow_exceptions=*/false);
  std::optional<json> reply;
  if (msg.is_discarded()) reply = error_response(nullptr, rpc_parse_error, "parse error: the line is not JSON");
  else reply = handle(msg);
  if (!reply) return std::nullopt;
  // dump() escapes control characters inside strings, so the line holds no raw newline;
  // invalid UTF-8 (a candidate printing garbage) is replaced rather than thrown on.
  return reply->dump(-1, ' ', false, json::error_handler_t::replace);
}

void mcp_server::serve(std::istream& in, std::ostream& out) {
  std::string line;
  while (std::getline(in, line)) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.find_first_not_of(" \t") == std::string::npos) continue;
    if (auto reply = handle_line(line)) {
      out << *reply << '\n';
      out.flush();
    }
  }
}

} // namespace kforge::agent
