#pragma once
// Provider-neutral values of one LLM call: what is asked (request), what came back
// (response), and what went wrong (error). Providers translate these to and from their
// wire formats; the replay transcript stores them as JSON.
//   llm::request r{.model = "gpt-4o-mini", .system = "Be terse.", .messages = {{llm::role::user, "Hi"}}};
#include <chrono>
#include <cstdint>
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
};

struct response {
  std::string text;
  std::string stop_reason;  // as the provider said it: "stop", "length", "end_turn", "max_tokens", ...
  llm::usage usage;
  std::string model;        // the model that answered
  std::string id;           // the provider's id (chatcmpl-..., msg_...)
};

// budget: the run's token or cost budget is spent (usage.hpp's ledger); never retryable.
enum class error_kind { auth, rate_limit, overloaded, server, timeout, bad_request, network, malformed, budget };

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

private:
  error_kind m_kind;
  bool m_retryable;
  int m_status;
  std::optional<std::chrono::milliseconds> m_retry_after;
};

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
