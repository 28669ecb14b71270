#pragma once
// An LLM endpoint behind one interface, chosen by a spec string.
//   auto p = llm::make_provider("anthropic:claude-sonnet-4-5", {});
//   llm::response r = p->complete(req, [](std::string_view t) { std::cout << t; });
// complete() returns the response or throws llm::error (errors are exceptions here:
// a failed call is rare and the caller's loop has one place to catch them). Retries,
// backoff and the per-endpoint concurrency limit happen inside complete().
//
// Specs: "openai:MODEL" (Chat Completions; also vLLM, llama.cpp, Ollama, OpenRouter via
// base_url), "anthropic:MODEL" (Messages), "replay:PATH" (answers from a transcript,
// replay.hpp). API keys come only from the environment (key_env, default OPENAI_API_KEY /
// ANTHROPIC_API_KEY); they are never logged and are redacted from every error message.
#include "llm/message.hpp"
#include "llm/retry.hpp"

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

namespace kforge::llm {

/// Called with each piece of generated text as it arrives (streaming), or once with the
/// whole text (non-streaming and replay). May be empty.
using text_callback = std::function<void(std::string_view)>;

class provider {
public:
  virtual ~provider() = default;
  /// @post on success, the text passed to on_text_delta concatenates to response.text.
  ///       On a retry after a failed stream no text has been passed yet: a stream that
  ///       fails after its first delta is not retried.
  [[nodiscard]] virtual response complete(const request& req, const text_callback& on_text_delta = {}) = 0;
  /// @return the spec this provider was made from, e.g. "openai:gpt-4o-mini" (no key).
  [[nodiscard]] virtual std::string spec() const = 0;
};

struct provider_options {
  std::string base_url;  // empty: https://api.openai.com/v1 or https://api.anthropic.com/v1
  std::string key_env;   // empty: OPENAI_API_KEY or ANTHROPIC_API_KEY
  retry_policy retry;
  int max_concurrency = 8;  // calls in flight per base URL, across all providers in the process
  std::chrono::milliseconds connect_timeout{10'000};
  std::chrono::milliseconds total_timeout{600'000};
  std::chrono::milliseconds stream_idle_timeout{60'000};
};

/// @throws llm::error (bad_request) for an unknown scheme or empty model; (auth) when the
///         key variable is unset and the base URL is the provider's own. With a custom
///         base URL (a local server) a missing key means "send no key".
[[nodiscard]] std::unique_ptr<provider> make_provider(std::string_view spec, const provider_options& opts = {});

} // namespace kforge::llm
