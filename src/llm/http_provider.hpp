#pragma once
// What the HTTP providers share: the key from the environment, the endpoint's
// concurrency slots, retries, and redaction of the key from every error.
// A provider implements attempt() (one HTTP exchange); complete() wraps it.
#include "llm/http.hpp"
#include "llm/provider.hpp"
#include "llm/retry.hpp"

#include <memory>
#include <string>

namespace kforge::llm {

class http_provider : public provider {
public:
  response complete(const request& req, const text_callback& on_text_delta) final;
  std::string spec() const final { return m_scheme + ":" + m_model; }

protected:
  /// @param default_base_url used when opts.base_url is empty
  http_provider(std::string scheme, std::string model, const provider_options& opts,
                std::string default_base_url, std::string default_key_env);
  /// One exchange with the server; throws llm::error (retryable ones are retried).
  virtual response attempt(const request& req, const text_callback& on_text_delta) = 0;
  /// Sends h. A failure once `delivered` (text already streamed to the caller) is turned
  /// non-retryable, so no caller sees the same text twice; a non-2xx status becomes the
  /// provider's http_error. A failure carries `*partial` (what streamed so far), if any.
  [[nodiscard]] http_response post(const http_request& h, const bool& delivered,
                                   const std::string* partial = nullptr) const;

  /// A truncated stream while other calls ran on this endpoint lowers its concurrency.
  void learn_from_cut_stream();

  std::string m_scheme, m_model, m_base_url, m_key_env, m_key;
  bool m_custom_base = false; // base URL overridden (vLLM, llama.cpp, Ollama, OpenRouter...)
  provider_options m_opts;

private:
  std::shared_ptr<slots> m_slots;
};

/// @return a provider for "openai:MODEL" / "anthropic:MODEL" (see provider.hpp).
std::unique_ptr<provider> make_openai(std::string model, const provider_options& opts);
std::unique_ptr<provider> make_anthropic(std::string model, const provider_options& opts);

} // namespace kforge::llm
