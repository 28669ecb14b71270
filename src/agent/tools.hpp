#pragma once
// kforge's tools for a coding agent: the verifier, the timer, the profiler, the tuner and
// the experiment log, each as one named call with a JSON Schema for its arguments, a
// structured answer (the same documents `kforge ... --json` prints) and a short text a
// model reads. The MCP server (agent/mcp.hpp) serves them; tests call them directly.
//   auto tools = agent::make_kforge_tools("kforge.db");
//   auto r = tools.find("evaluate")->run({{"problem", "problems/cpu/gelu"}, {"path", "gelu.cpp"}});
//   // r.text:       "evaluation #12 of gelu: PASSED ... kept: yes"
//   // r.structured: the kforge.eval/1 document, with evaluation_id and kept
//   // r.is_error:   true only when the tool could not do its job (no such file, broken
//   //               problem); a candidate that fails a check is a normal answer
// Tools: describe_problem, evaluate, profile, tune, history, best, export, report.
// Every call opens the experiment database afresh, so calls are independent of each other
// and of other kforge processes using the same file. Paths are taken relative to the
// working directory of the process serving the tools.
#include <nlohmann/json.hpp>

#include <filesystem>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

namespace kforge::agent {

/// What a running call may use: a way to say where it is, and whether its client gave up.
/// Both may be called from any thread; both are optional (a default context does nothing).
struct call_context {
  /// "verify", "evaluation 3 of 16": where the call is, for the client's progress display.
  std::function<void(const std::string& message)> progress;
  /// True once the client cancelled the call or went away: stop soon, answer anything.
  std::function<bool()> cancelled;
  /// Why, once cancelled ("the client cancelled it: timed out after 3.0s").
  std::function<std::string()> why_cancelled;

  void report(const std::string& message) const {
    if (progress) progress(message);
  }
  [[nodiscard]] bool is_cancelled() const { return cancelled && cancelled(); }
};

/// What a tool answers.
struct tool_result {
  nlohmann::json structured = nlohmann::json::object(); // machine-readable; an object
  std::string text;                                     // what a model reads: short, says what to do next
  bool is_error = false;                                // the tool could not run (not: the candidate failed)
};

struct tool {
  std::string name;        // snake_case, unique
  std::string title;       // for people ("Evaluate a candidate")
  std::string description; // for the model: what it does, when to use it, what it returns
  nlohmann::json input_schema; // JSON Schema of the arguments: {"type": "object", "properties": ..., "required": ...}
  /// JSON Schema of `structured` when the call succeeds (an object schema); MCP clients
  /// validate against it.
  nlohmann::json output_schema = {{"type", "object"}};
  bool read_only = false;   // reads the record only: clients may run it without asking
  bool uses_device = false; // builds, runs and times kernels: one such call at a time per device
  /// Runs the tool on arguments already checked against input_schema. May throw; the
  /// server turns kforge::error into an is_error result with the message.
  std::function<tool_result(const nlohmann::json& args, const call_context& ctx)> run;
};

class tool_registry {
public:
  /// @throws kforge::error (internal) on a duplicate name or an input schema that is not an object schema.
  void add(tool t);
  [[nodiscard]] const tool* find(std::string_view name) const;
  [[nodiscard]] const std::vector<tool>& all() const { return m_tools; }

private:
  std::vector<tool> m_tools;
};

/// The arguments checked against the subset of JSON Schema the tools use: type (one or a
/// list), properties, required, additionalProperties false, enum, minimum, maximum,
/// exclusiveMinimum.
/// @return "" when they fit, else one line naming the argument and what is expected.
[[nodiscard]] std::string check_arguments(const nlohmann::json& schema, const nlohmann::json& args);

/// Runs a tool: checks the arguments, calls it, and turns an exception into an is_error
/// result whose text says what went wrong (kforge::error's message is meant for users).
[[nodiscard]] tool_result call_tool(const tool& t, const nlohmann::json& args, const call_context& ctx = {});

/// kforge's tools over the experiment database at `db_path` (created on first write).
[[nodiscard]] tool_registry make_kforge_tools(const std::filesystem::path& db_path);

} // namespace kforge::agent
