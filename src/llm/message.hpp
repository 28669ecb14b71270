#pragma once
// Provider-neutral values of one LLM call: what is asked (request), what came back
// (response), and what went wrong (error). Providers translate these to and from their
// wire formats; the replay transcript stores them as JSON.
//   llm::request r{.model = "gpt-4o-mini", .system = "Be terse.", .messages = {{llm::role::user, "Hi"}}};
#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json_fwd.hpp>

namespace kforge::llm {

enum class role { user, assistant };

struct message {
  llm::role role = role::user;
  std::string text;
};

struct request {
  std::string model;                // empty: the provider's model (from its spec string)
  std::string system;               // empty: no system prompt
  std::vector<message> messages;
  int max_tokens = 4096;
  std::optional<double> temperature;
  std::vector<std::string> stop;    // stop sequences
  bool stream = false;              // stream from the server (on_text_delta sees text as it comes)
  bool cache_system = false;        // Anthropic: mark the system block cacheable (prompt caching)
  // A name for this call that is stable across re-runs ("branch/r2/idea3/impl1"): replay
  // and resume match by it when set, since a prompt that quotes measured times differs
  // from run to run. Not sent to any server; not part of request_hash.
  std::string replay_key;
};

// Token counts normalised across providers. input_tokens is the whole prompt, cached
// or not (OpenAI prompt_tokens; Anthropic input + cache_creation + cache_read), so cost
// code needs no provider knowledge.
struct usage {
  int64_t input_tokens = 0;
  int64_t output_tokens = 0;        // includes reasoning tokens
  int64_t cached_input_tokens = 0;  // of input_tokens, read from the prompt cache
  int64_t cache_write_tokens = 0;   // of input_tokens, written to the prompt cache (Anthropic)
  /// The server sent no counts (a stream without its usage chunk: llama.cpp's server ignores
  /// stream_options.include_usage): input and output are estimated from the text (usage.hpp).
  bool estimated = false;
};

struct response {
  std::string text;
  std::string stop_reason;  // as the provider said it: "stop", "length", "end_turn", "max_tokens", ...
  llm::usage usage;
  std::string model;        // the model that answered
  std::string id;           // the provider's id (chatcmpl-..., msg_...)
};

// budget: the run's token or cost budget is spent (usage.hpp's ledger); never retryable.
// unreachable: the endpoint refused the connection or its host does not resolve.
// truncated: the answer ended without a finish reason (a server that cut the stream).
enum class error_kind {
  auth, rate_limit, overloaded, server, timeout, bad_request, network, malformed, budget, unreachable, truncated
};

[[nodiscard]] std::string_view error_kind_name(error_kind k);
[[nodiscard]] std::optional<error_kind> error_kind_from_name(std::string_view name);

// A failed call. The message says what to do about it and never contains an API key
// (providers pass every message through redact()).
class error : public std::runtime_error {
public:
  error(error_kind k, std::string msg, bool retryable = false, int http_status = 0,
        std::optional<std::chrono::milliseconds> retry_after = std::nullopt)
      : std::runtime_error(std::move(msg)), m_kind(k), m_retryable(retryable),
        m_status(http_status), m_retry_after(retry_after) {}
  [[nodiscard]] error_kind kind() const { return m_kind; }
  /// Whether trying the same request again may succeed (retry.hpp decides how long to wait).
  [[nodiscard]] bool retryable() const { return m_retryable; }
  /// @return the HTTP status, 0 when none was received.
  [[nodiscard]] int http_status() const { return m_status; }
  /// The wait the server asked for (retry-after-ms / retry-after), when it asked.
  [[nodiscard]] std::optional<std::chrono::milliseconds> retry_after() const { return m_retry_after; }
  /// What the server streamed before the call failed (a cut stream, a stall): recorded with
  /// the failed call and counted against the budget, since the server spent those tokens.
  [[nodiscard]] const std::string& partial_text() const { return m_partial; }
  error& with_partial_text(std::string text) {
    m_partial = std::move(text);
    return *this;
  }

private:
  error_kind m_kind;
  bool m_retryable;
  int m_status;
  std::optional<std::chrono::milliseconds> m_retry_after;
  std::string m_partial;
};

/// Whether an error says the endpoint itself is wrong (refused connection, unknown host, bad
/// key, no such model or URL): no later call to it can succeed, so a search ends at once.
[[nodiscard]] bool ends_the_run(const error& e);

/// Something a user should know that is not an error (a server that cuts streams under load,
/// so kforge sends it fewer calls at once). The default prints "kforge: warning: ..." to
/// stderr; a command may route it elsewhere (its event stream). Thread-safe.
void warn(const std::string& message);
void set_warning_sink(std::function<void(const std::string&)> sink);

/// Replaces every occurrence of `secret` in `text` with "[redacted]" (no-op for an empty secret).
[[nodiscard]] std::string redact(std::string text, std::string_view secret);

// JSON forms, used by the replay transcript.
[[nodiscard]] nlohmann::json to_json(const request& r);
[[nodiscard]] nlohmann::json to_json(const response& r);
[[nodiscard]] response response_from_json(const nlohmann::json& j);

/// Fingerprint of what determines an answer: model, system, messages, max_tokens,
/// temperature, stop. `stream` and `cache_system` change how the answer is delivered or
/// billed, not what it is, so they are left out.
[[nodiscard]] std::string request_hash(const request& r);

} // namespace kforge::llm
