#include "agent/mcp.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <iostream>
#include <thread>

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

/// Calls f with each line of `in` that is not blank, a trailing '\r' dropped, until EOF.
template <typename F>
void for_each_line(std::istream& in, F&& f) {
  std::string line;
  while (std::getline(in, line)) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.find_first_not_of(" \t") != std::string::npos) f(line);
  }
}

bool valid_id(const json& id) { return id.is_string() || id.is_number_integer() || id.is_number_unsigned(); }

// structuredContent and tool titles came with 2025-06-18; older clients get neither.
bool knows_structured_content(const std::string& version) { return version >= "2025-06-18"; }

} // namespace

/// A tools/call in flight: its thread, whether it was cancelled, where it is.
struct mcp_server::call {
  json id;
  std::string key; // id.dump()
  const tool* t = nullptr;
  json args;
  json progress_token; // null: the client asked for no progress
  std::atomic<bool> cancelled = false;
  std::string reason;       // why, once cancelled (under m_mutex)
  std::string phase;        // the last thing it reported (under m_mutex)
  double progress = 0;      // the last progress value sent: each one must be larger
  std::chrono::steady_clock::time_point started = std::chrono::steady_clock::now(), last_sent{};
  std::atomic<bool> done = false;
  bool closed = false; // its response is out, or it was cancelled: nothing more (under m_out_mutex)
  std::thread thread;
};

mcp_server::mcp_server(const tool_registry& tools, std::string instructions)
    : m_tools(tools), m_instructions(std::move(instructions)),
      m_runner([](const tool& t, const json& args, const call_context& ctx) { return call_tool(t, args, ctx); }) {}

mcp_server::~mcp_server() { cancel_all("the server is shutting down"); }

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

json mcp_server::on_tools_list(const json& params) const {
  if (params.is_object() && params.contains("cursor"))
    throw rpc_error{rpc_invalid_params, "tools/list: invalid cursor: kforge lists every tool in one page"};
  json list = json::array();
  const bool newer = knows_structured_content(m_version);
  for (const auto& t : m_tools.all()) {
    json j{{"name", t.name}, {"description", t.description}, {"inputSchema", t.input_schema}};
    if (!t.title.empty() && newer) j["title"] = t.title;
    if (newer) j["outputSchema"] = t.output_schema;
    if (m_version >= "2025-03-26") // tool annotations came with 2025-03-26
      j["annotations"] = {{"readOnlyHint", t.read_only},
                          {"destructiveHint", false},
                          {"idempotentHint", t.read_only},
                          {"openWorldHint", false}};
    list.push_back(std::move(j));
  }
  return {{"tools", list}};
}

std::pair<const tool*, json> mcp_server::call_target(const json& params) const {
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
  return {t, std::move(args)};
}

json mcp_server::call_result(const tool_result& r) const {
  // The summary a model reads first, then the whole answer as compact JSON (what the spec
  // asks of a tool that returns structured content), so a client that shows only text still
  // has every number.
  json content = json::array({{{"type", "text"}, {"text", r.text}}});
  const bool has_structure = !r.is_error && !(r.structured.is_object() && r.structured.empty());
  if (has_structure)
    content.push_back({{"type", "text"}, {"text", r.structured.dump(-1, ' ', false, json::error_handler_t::replace)}});
  json out{{"content", content}, {"isError", r.is_error}};
  if (has_structure && knows_structured_content(m_version))
    out["structuredContent"] = r.structured.is_object() ? r.structured : json{{"value", r.structured}};
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
    if (method == "notifications/cancelled" && params.is_object() && params.contains("requestId"))
      cancel(params["requestId"], params.value("reason", json()).is_string()
                                      ? "its MCP client cancelled the call (" + params["reason"].get<std::string>() + ")"
                                      : std::string("its MCP client cancelled the call"));
    return std::nullopt;
  }
  if (!valid_id(id)) return error_response(nullptr, rpc_invalid_request, "id must be a string or an integer");

  try {
    if (method == "initialize") return result_response(id, on_initialize(params));
    if (method == "ping") return result_response(id, json::object());
    if (!m_initialized)
      return error_response(id, rpc_invalid_request,
                            fmt::format("'{}' before initialize: send initialize first (MCP lifecycle)", method));
    if (method == "tools/list") return result_response(id, on_tools_list(params));
    if (method == "tools/call") {
      if (m_out) return start_call(id, params); // serving: on a thread of its own
      auto [t, args] = call_target(params);
      return result_response(id, call_result(m_runner(*t, args, call_context{})));
    }
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

// ------------------------------------------------------------------ serving concurrently

std::optional<json> mcp_server::progress_note(call& c, const std::string& message) {
  // Under m_mutex. Each value larger than the last (the spec's rule): seconds since the call
  // began, nudged up when two fall in the same instant.
  const auto now = std::chrono::steady_clock::now();
  const double elapsed = std::chrono::duration<double>(now - c.started).count();
  c.progress = std::max(std::round(elapsed * 10) / 10, c.progress + 0.1);
  c.last_sent = now;
  if (c.progress_token.is_null()) return std::nullopt;
  return json{{"jsonrpc", "2.0"},
              {"method", "notifications/progress"},
              {"params",
               {{"progressToken", c.progress_token},
                {"progress", c.progress},
                {"message", fmt::format("{}: {} ({:.0f} s)", c.t->name, message, elapsed)}}}};
}

void mcp_server::send_for(call& c, const std::optional<json>& message, bool last) {
  // Written without m_mutex held, so a client slow to read cannot hold up cancellation or
  // the queue; under m_out_mutex, so nothing of a call follows its response.
  std::lock_guard lock(m_out_mutex);
  if (c.closed) return;
  if (message) {
    *m_out << message->dump(-1, ' ', false, json::error_handler_t::replace) << '\n';
    m_out->flush();
  }
  if (last) c.closed = true;
}

std::optional<json> mcp_server::start_call(const json& id, const json& params) {
  auto [t, args] = call_target(params);
  auto c = std::make_shared<call>();
  c->id = id;
  c->key = id.dump();
  c->t = t;
  c->args = std::move(args);
  if (params.contains("_meta") && params["_meta"].is_object())
    c->progress_token = params["_meta"].value("progressToken", json());
  std::lock_guard lock(m_mutex);
  if (m_calls.count(c->key))
    return error_response(id, rpc_invalid_request, fmt::format("request id {} is already in use by a call in flight", c->key));
  m_calls[c->key] = c;
  c->phase = "started";
  c->thread = std::thread([this, c] { run_call(c); });
  return std::nullopt;
}

void mcp_server::run_call(const std::shared_ptr<call>& c) {
  call_context ctx;
  ctx.progress = [this, c](const std::string& message) {
    std::optional<json> note;
    {
      std::lock_guard lock(m_mutex);
      c->phase = message;
      note = progress_note(*c, message);
    }
    send_for(*c, note, false);
  };
  ctx.cancelled = [c] { return c->cancelled.load(); };
  ctx.why_cancelled = [this, c] {
    std::lock_guard lock(m_mutex);
    return c->reason;
  };

  bool run = true;
  if (c->t->uses_device) { // one kernel-running call at a time: wait for the device, saying where
    std::unique_lock lock(m_mutex);
    m_device_queue.push_back(c.get());
    std::size_t said = static_cast<std::size_t>(-1);
    while (m_device_queue.front() != c.get() && !c->cancelled) {
      const auto ahead = static_cast<std::size_t>(
          std::find(m_device_queue.begin(), m_device_queue.end(), c.get()) - m_device_queue.begin());
      if (ahead != said) {
        c->phase = fmt::format("queued for the device, {} call{} ahead", ahead, ahead == 1 ? "" : "s");
        const auto note = progress_note(*c, c->phase);
        said = ahead;
        lock.unlock();
        send_for(*c, note, false);
        lock.lock();
        continue; // the queue may have moved meanwhile
      }
      m_changed.wait(lock);
    }
    run = !c->cancelled;
  }
  tool_result r;
  if (run) try { // a runner that throws (a process that cannot start) answers, never ends the server
      r = m_runner(*c->t, c->args, ctx);
    } catch (const std::exception& e) {
      r = {.text = fmt::format("{} could not run: {}", c->t->name, e.what()), .is_error = true};
    }
  {
    std::lock_guard lock(m_mutex);
    if (c->t->uses_device) {
      m_device_queue.erase(std::remove(m_device_queue.begin(), m_device_queue.end(), c.get()), m_device_queue.end());
      m_changed.notify_all();
    }
  }
  if (c->cancelled) { // the spec: no response to a cancelled request
    std::cerr << fmt::format("kforge mcp: {} (request {}) cancelled: {}\n", c->t->name, c->key, c->reason);
    send_for(*c, std::nullopt, true);
  } else {
    send_for(*c, result_response(c->id, call_result(r)), true);
  }
  {
    // Under the mutex: reap(true) checks `done` under it and then waits; set between its check
    // and its wait, the notification was lost and a SIGTERM'd server never exited.
    std::lock_guard lock(m_mutex);
    c->done = true;
  }
  m_changed.notify_all();
}

void mcp_server::cancel(const json& request_id, const std::string& reason) {
  std::lock_guard lock(m_mutex);
  auto it = m_calls.find(request_id.dump());
  if (it == m_calls.end() || it->second->done) return; // finished already, or never ours: ignore (the spec)
  if (!it->second->cancelled) it->second->reason = reason;
  it->second->cancelled = true;
  m_changed.notify_all();
}

void mcp_server::ticker() {
  // At least one progress notification a second while a call runs (a client's timeout
  // need not fire on a long but live evaluation).
  std::unique_lock lock(m_mutex);
  while (!m_stopping || !m_calls.empty()) {
    m_changed.wait_for(lock, std::chrono::milliseconds(250));
    const auto now = std::chrono::steady_clock::now();
    std::vector<std::pair<std::shared_ptr<call>, std::optional<json>>> due;
    for (auto& [key, c] : m_calls)
      if (!c->done && !c->cancelled && now - c->last_sent >= std::chrono::seconds(1))
        due.emplace_back(c, progress_note(*c, c->phase));
    lock.unlock();
    for (auto& [c, note] : due) send_for(*c, note, false);
    lock.lock();
    if (m_stopping && m_calls.empty()) break;
  }
}

void mcp_server::reap(bool all) {
  std::vector<std::shared_ptr<call>> ended;
  {
    std::unique_lock lock(m_mutex);
    if (all) m_changed.wait(lock, [this] {
        return std::all_of(m_calls.begin(), m_calls.end(), [](auto& kv) { return kv.second->done.load(); });
      });
    for (auto it = m_calls.begin(); it != m_calls.end();)
      if (it->second->done) {
        ended.push_back(it->second);
        it = m_calls.erase(it);
      } else {
        ++it;
      }
  }
  for (auto& c : ended)
    if (c->thread.joinable()) c->thread.join();
}

void mcp_server::cancel_all(const std::string& reason) {
  {
    std::lock_guard lock(m_mutex);
    for (auto& [key, c] : m_calls)
      if (!c->done && !c->cancelled) {
        c->reason = reason;
        c->cancelled = true;
      }
    m_changed.notify_all();
  }
  reap(true);
}

void mcp_server::serve_in_order(std::istream& in, std::ostream& out) {
  for_each_line(in, [&](const std::string& line) {
    if (auto reply = handle_line(line)) { // m_out unset: tools/call runs here, to the end
      out << *reply << '\n';
      out.flush();
    }
  });
}

void mcp_server::serve(std::istream& in, std::ostream& out) {
  m_out = &out;
  std::thread tick([this] { ticker(); });
  for_each_line(in, [&](const std::string& line) {
    if (auto reply = handle_line(line)) {
      std::lock_guard lock(m_out_mutex);
      out << *reply << '\n';
      out.flush();
    }
    reap(false);
  });
  // End of input: the client went away; nobody is left to read an answer.
  cancel_all("its MCP client closed the connection");
  {
    std::lock_guard lock(m_mutex);
    m_stopping = true;
    m_changed.notify_all();
  }
  tick.join();
  m_out = nullptr;
}

} // namespace kforge::agent
